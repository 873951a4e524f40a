//! Which finalizer names the API server takes from a controller.

use super::Error;

/// The longest DNS subdomain, the prefix of a qualified name.
const MAX_PREFIX: usize = 253;
/// The longest name part of a qualified name.
const MAX_NAME: usize = 63;

/// Checks that `finalizer` is a qualified name with a prefix,
/// `example.com/cleanup`: a lowercase DNS subdomain, `/`, then 1 to 63
/// letters, digits, `-`, `_` or `.`, starting and ending with a letter or
/// digit.
///
/// The API server refuses any other name on built-in kinds ("neither a
/// standard finalizer name nor fully qualified", 422) and warns about one
/// without a prefix on custom resources; the names without a prefix it
/// knows (`kubernetes`, `orphan`, `foregroundDeletion`) belong to
/// Kubernetes' own controllers. Checking first turns a typo into an error
/// before any write, the same on every kind.
pub(super) fn check<E>(finalizer: &str) -> Result<(), Error<E>> {
    let invalid = |why: String| Error::InvalidFinalizer {
        name: finalizer.to_owned(),
        why,
    };
    let Some((prefix, name)) = finalizer.split_once('/') else {
        return Err(invalid(
            "it has no prefix: use a qualified name like example.com/cleanup".into(),
        ));
    };
    if let Err(why) = check_prefix(prefix) {
        return Err(invalid(format!("prefix {prefix:?} {why}")));
    }
    if let Err(why) = check_name(name) {
        return Err(invalid(format!("name part {name:?} {why}")));
    }
    Ok(())
}

/// A lowercase RFC 1123 subdomain: labels of `a-z`, `0-9` and `-`,
/// starting and ending alphanumeric, joined by `.`.
fn check_prefix(prefix: &str) -> Result<(), &'static str> {
    if prefix.is_empty() {
        return Err("is empty");
    }
    if prefix.len() > MAX_PREFIX {
        return Err("is longer than 253 characters");
    }
    let label_ok = |label: &str| {
        let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        let bytes = label.as_bytes();
        !bytes.is_empty()
            && alnum(bytes[0])
            && alnum(bytes[bytes.len() - 1])
            && bytes.iter().all(|&b| alnum(b) || b == b'-')
    };
    if prefix.split('.').all(label_ok) {
        Ok(())
    } else {
        Err("is not a lowercase DNS subdomain (a-z, 0-9, '-' and '.', alphanumeric at each end)")
    }
}

fn check_name(name: &str) -> Result<(), &'static str> {
    let bytes = name.as_bytes();
    if bytes.is_empty() {
        return Err("is empty");
    }
    if bytes.len() > MAX_NAME {
        return Err("is longer than 63 characters");
    }
    let inner = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    if bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes.iter().all(|&b| inner(b))
    {
        Ok(())
    } else {
        Err("must be letters, digits, '-', '_' or '.', alphanumeric at each end")
    }
}

#[cfg(test)]
mod tests {
    use super::{Error, check};

    fn why(name: &str) -> Option<String> {
        match check::<()>(name) {
            Ok(()) => None,
            Err(Error::InvalidFinalizer { name: got, why }) => {
                assert_eq!(got, name);
                Some(why)
            }
            Err(other) => panic!("{other:?}"),
        }
    }

    /// Z6: the names the API server takes pass; the rest fail before any write.
    #[test]
    fn z6_finalizer_names_are_qualified_names_with_a_prefix() {
        for good in [
            "example.com/cleanup",
            "a/b",
            "mirror.kube-informer.io/Cleanup_1.x",
            "x1-2.y/z",
            &format!("{}/{}", "a".repeat(63), "n".repeat(63)),
        ] {
            assert_eq!(why(good), None, "{good}");
        }
        for (bad, says) in [
            ("cleanup", "no prefix"),
            ("kubernetes", "no prefix"),
            ("/cleanup", "prefix \"\" is empty"),
            ("example.com/", "name part \"\" is empty"),
            ("Example.com/cleanup", "DNS subdomain"),
            ("example..com/cleanup", "DNS subdomain"),
            ("-example.com/cleanup", "DNS subdomain"),
            ("Bad Name/x", "DNS subdomain"),
            ("example.com/a/b", "name part \"a/b\""),
            ("example.com/-x", "alphanumeric at each end"),
            ("example.com/x y", "alphanumeric at each end"),
            (&format!("example.com/{}", "n".repeat(64)), "longer than 63"),
            (&format!("{}/x", "a".repeat(254)), "longer than 253"),
        ] {
            let why = why(bad).unwrap_or_else(|| panic!("{bad:?} passed"));
            assert!(why.contains(says), "{bad:?}: {why}");
        }
    }
}
