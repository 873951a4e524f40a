//! Request bodies that do not decode, answered with the API server's
//! messages (WR5). Its decoder reports the first syntax error of a body in
//! the words of its JSON scanner (`invalid character 'n' looking for
//! beginning of object key string`), which clients and people match on, so
//! this module scans a body the same way rather than quoting serde's error.

use axum::http::header;
use serde_json::Value;

use super::{ObjectRequest, bad_request};
use crate::{faults::ApiStatus, merge_keys::Schema, resource::ResourceType};

/// The body of a create or replace as a JSON object (sent as JSON, or as
/// YAML), or the API server's answer: 415 for a media type it does not
/// read, 400 `the object provided is unrecognized (must be of type Kind):
/// …` with a summary of a body that does not decode, 400 `… cannot be
/// handled as a Kind` for a built-in object of another kind (WR5).
pub(super) fn object(rt: &ResourceType, request: &ObjectRequest<'_>) -> Result<Value, ApiStatus> {
    let media_type = request
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        });
    let object = match media_type.as_deref() {
        None | Some("" | "application/json") => json_object(rt, request.body)?,
        Some("application/yaml") => yaml_object(request.body)?,
        Some("application/vnd.kubernetes.protobuf") => {
            return Err(ApiStatus::new(
                415,
                "UnsupportedMediaType",
                "the fake API server does not read protobuf bodies; send application/json",
            ));
        }
        Some(_) => {
            return Err(ApiStatus::new(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types \
                 include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
            ));
        }
    };
    of_kind(rt, object)
}

/// Refuses a built-in object of another kind of the same API version, as
/// the API server's conversion does; custom resources are checked by
/// their definition (`crd`).
fn of_kind(rt: &ResourceType, object: Value) -> Result<Value, ApiStatus> {
    let kind = object["kind"].as_str().unwrap_or("");
    let api_version = object["apiVersion"].as_str().unwrap_or("");
    if kind.is_empty() || kind == rt.kind || !Schema::of(rt).is_builtin() {
        return Ok(object);
    }
    if api_version != rt.api_version() {
        return Ok(object);
    }
    // The API server names the Go packages of the versioned and internal
    // types: `v1` and `core` for the core group, else the group's first
    // word (`apps`, `batch`, `networking`).
    let internal = match rt.group.split('.').next() {
        Some("") | None => "core",
        Some(first) => first,
    };
    Err(bad_request(&format!(
        "{kind} in version {:?} cannot be handled as a {}: converting ({}.{kind}) to \
         ({internal}.{}): unknown conversion",
        rt.version, rt.kind, rt.version, rt.kind
    )))
}

fn yaml_object(body: &[u8]) -> Result<Value, ApiStatus> {
    match serde_saphyr::from_slice::<Value>(body) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(Value::Null) => Ok(Value::Object(serde_json::Map::new())),
        Ok(other) => Err(bad_request(&format!(
            "the YAML body is a {}, not an object",
            json_type(&other)
        ))),
        Err(e) => Err(bad_request(&format!("error converting YAML to JSON: {e}"))),
    }
}

fn json_object(rt: &ResourceType, body: &[u8]) -> Result<Value, ApiStatus> {
    let why = match syntax_error(body) {
        Some(error) => error,
        None => match serde_json::from_slice::<Value>(body) {
            Ok(value @ Value::Object(_)) => return Ok(value),
            // Decoded into an object, `null` leaves it empty.
            Ok(Value::Null) => return Ok(Value::Object(serde_json::Map::new())),
            Ok(other) => format!(
                "json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \
                 \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
                json_type(&other)
            ),
            // The scanner accepted it; serde refusing it too would be a bug here.
            Err(e) => e.to_string(),
        },
    };
    Err(bad_request(&format!(
        "the object provided is unrecognized (must be of type {}): couldn't get version/kind; \
         json parse error: {why} ({})",
        rt.kind,
        summary(body)
    )))
}

/// The body of a merge patch or (with `strategic`) a strategic merge
/// patch as a JSON object, or the API server's 400: the decoder's error,
/// after `error decoding patch: ` for a merge patch.
pub(super) fn patch_object(body: &[u8], strategic: bool) -> Result<Value, ApiStatus> {
    let prefix = if strategic {
        ""
    } else {
        "error decoding patch: "
    };
    let why = match syntax_error(body) {
        Some(why) => why,
        None => match serde_json::from_slice::<Value>(body) {
            Ok(value @ Value::Object(_)) => return Ok(value),
            Ok(other) => format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_type(&other)
            ),
            Err(e) => e.to_string(),
        },
    };
    Err(bad_request(&format!("{prefix}{why}")))
}

/// A JSON body's type as Go's decoder names it.
pub(super) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The first 30 bytes of a body as the API server quotes it: as text when
/// it starts with `{`, else in hex; ` ...` when cut.
fn summary(body: &[u8]) -> String {
    const MAX: usize = 30;
    let cut = &body[..body.len().min(MAX)];
    let more = if body.len() > MAX { " ..." } else { "" };
    match body.first() {
        None => "<empty>".to_owned(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(cut)),
        Some(_) => {
            let hex: String = cut.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// The first syntax error in `body`, in the API server's words; `None`
/// for valid JSON.
pub(super) fn syntax_error(body: &[u8]) -> Option<String> {
    let mut scanner = Scanner { body, at: 0 };
    let result = scanner.value().and_then(|()| {
        scanner.skip_space();
        match scanner.peek() {
            None => Ok(()),
            Some(c) => Err(invalid(c, "after top-level value")),
        }
    });
    result.err()
}

const END: &str = "unexpected end of JSON input";

fn invalid(c: u8, context: &str) -> String {
    format!("invalid character {} {context}", quote(c))
}

/// A byte quoted as the API server's scanner quotes it.
fn quote(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_owned(),
        b'"' => "'\"'".to_owned(),
        b'\t' => "'\\t'".to_owned(),
        b'\n' => "'\\n'".to_owned(),
        b'\r' => "'\\r'".to_owned(),
        0x20..=0x7e => format!("'{}'", c as char),
        0x00..=0x1f | 0x7f => format!("'\\x{c:02x}'"),
        // Bytes above ASCII are quoted as the Latin-1 character they
        // would be; the non-printing ones escaped.
        0x80..=0xa0 | 0xad => format!("'\\u{c:04x}'"),
        _ => format!("'{}'", char::from(c)),
    }
}

struct Scanner<'a> {
    body: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.body.get(self.at).copied()
    }

    fn next(&mut self) -> Result<u8, String> {
        let c = self.peek().ok_or_else(|| END.to_owned())?;
        self.at += 1;
        Ok(c)
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.at += 1;
        }
    }

    /// The next non-space byte, taken.
    fn next_token(&mut self) -> Result<u8, String> {
        self.skip_space();
        self.next()
    }

    fn value(&mut self) -> Result<(), String> {
        let c = self.next_token()?;
        self.value_from(c)
    }

    fn value_from(&mut self, c: u8) -> Result<(), String> {
        match c {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => self.string(),
            b'-' | b'0'..=b'9' => self.number(c),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            _ => Err(invalid(c, "looking for beginning of value")),
        }
    }

    fn object(&mut self) -> Result<(), String> {
        let mut c = self.next_token()?;
        if c == b'}' {
            return Ok(());
        }
        loop {
            if c != b'"' {
                return Err(invalid(c, "looking for beginning of object key string"));
            }
            self.string()?;
            let colon = self.next_token()?;
            if colon != b':' {
                return Err(invalid(colon, "after object key"));
            }
            self.value()?;
            match self.next_token()? {
                b',' => c = self.next_token()?,
                b'}' => return Ok(()),
                other => return Err(invalid(other, "after object key:value pair")),
            }
        }
    }

    fn array(&mut self) -> Result<(), String> {
        let c = self.next_token()?;
        if c == b']' {
            return Ok(());
        }
        self.value_from(c)?;
        loop {
            match self.next_token()? {
                b',' => self.value()?,
                b']' => return Ok(()),
                other => return Err(invalid(other, "after array element")),
            }
        }
    }

    fn string(&mut self) -> Result<(), String> {
        loop {
            match self.next()? {
                b'"' => return Ok(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            let h = self.next()?;
                            if !h.is_ascii_hexdigit() {
                                return Err(invalid(h, "in \\u hexadecimal character escape"));
                            }
                        }
                    }
                    other => return Err(invalid(other, "in string escape code")),
                },
                c if c < 0x20 => return Err(invalid(c, "in string literal")),
                _ => {}
            }
        }
    }

    /// A number; the byte after it is left for the enclosing value.
    fn number(&mut self, first: u8) -> Result<(), String> {
        let digits = |s: &mut Self| {
            while s.peek().is_some_and(|c| c.is_ascii_digit()) {
                s.at += 1;
            }
        };
        let mut lead = first;
        if first == b'-' {
            lead = self.next()?;
            if !lead.is_ascii_digit() {
                return Err(invalid(lead, "in numeric literal"));
            }
        }
        if lead != b'0' {
            digits(self);
        }
        if self.peek() == Some(b'.') {
            self.at += 1;
            let c = self.next()?;
            if !c.is_ascii_digit() {
                return Err(invalid(c, "after decimal point in numeric literal"));
            }
            digits(self);
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            let mut c = self.next()?;
            if matches!(c, b'+' | b'-') {
                c = self.next()?;
            }
            if !c.is_ascii_digit() {
                return Err(invalid(c, "in exponent of numeric literal"));
            }
            digits(self);
        }
        Ok(())
    }

    fn literal(&mut self, word: &str) -> Result<(), String> {
        for expected in word.bytes().skip(1) {
            let c = self.next()?;
            if c != expected {
                return Err(invalid(
                    c,
                    &format!("in literal {word} (expecting {})", quote(expected)),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{summary, syntax_error};

    #[test]
    fn wr5_syntax_errors_are_named_as_the_api_server_names_them() {
        let cases: &[(&str, Option<&str>)] = &[
            (r#"{"a": [1, 2.5e-3, true, null, "x\u00e9"]}"#, None),
            (
                "{not json",
                Some("invalid character 'n' looking for beginning of object key string"),
            ),
            ("", Some("unexpected end of JSON input")),
            ("{\"a\"", Some("unexpected end of JSON input")),
            ("{\"a\" 1}", Some("invalid character '1' after object key")),
            (
                "{\"a\": 1 \"b\"}",
                Some("invalid character '\"' after object key:value pair"),
            ),
            ("[1 2]", Some("invalid character '2' after array element")),
            (
                "<x/>",
                Some("invalid character '<' looking for beginning of value"),
            ),
            (
                "hello",
                Some("invalid character 'h' looking for beginning of value"),
            ),
            ("{} x", Some("invalid character 'x' after top-level value")),
            ("01", Some("invalid character '1' after top-level value")),
            ("-x", Some("invalid character 'x' in numeric literal")),
            (
                "1.x",
                Some("invalid character 'x' after decimal point in numeric literal"),
            ),
            (
                "1ex",
                Some("invalid character 'x' in exponent of numeric literal"),
            ),
            ("tru", Some("unexpected end of JSON input")),
            (
                "nul1",
                Some("invalid character '1' in literal null (expecting 'l')"),
            ),
            (
                "\"a\\qb\"",
                Some("invalid character 'q' in string escape code"),
            ),
            (
                "\"a\nb\"",
                Some("invalid character '\\n' in string literal"),
            ),
        ];
        for (body, expected) in cases {
            assert_eq!(
                syntax_error(body.as_bytes()).as_deref(),
                *expected,
                "body {body:?}"
            );
        }
    }

    #[test]
    fn wr5_a_body_is_summarised_as_text_or_hex() {
        assert_eq!(summary(b"{not json"), "{not json");
        assert_eq!(summary(b"[1,2]"), "5b312c325d");
        assert_eq!(summary(b""), "<empty>");
        let long = format!("{{{}", "a".repeat(40));
        assert_eq!(
            summary(long.as_bytes()),
            format!("{{{} ...", "a".repeat(29))
        );
    }
}
