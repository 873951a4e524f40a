//! The text JSON gives where protobuf gives numbers or bytes: RFC 3339
//! timestamps as Go's `metav1.Time` and `metav1.MicroTime` write them, and
//! base64 for `[]byte`.

use super::Error;

/// Seconds of 0001-01-01T00:00:00Z, Go's zero `time.Time`, which JSON
/// writes as `null`.
pub(crate) const GO_ZERO_SECONDS: i64 = -62_135_596_800;
/// Seconds of 9999-12-31T23:59:59Z, the last instant RFC 3339 can write.
const MAX_SECONDS: i64 = 253_402_300_799;

/// A timestamp as `YYYY-MM-DDTHH:MM:SSZ`, with `.ffffff` after the seconds
/// when `micros` is given. Years outside 1..=9999 are an error, as Go's
/// `MarshalJSON` makes them.
pub(crate) fn rfc3339(
    seconds: i64,
    micros: Option<u32>,
    out: &mut [u8; 27],
) -> Result<&str, Error> {
    if !(GO_ZERO_SECONDS..=MAX_SECONDS).contains(&seconds) {
        return Err(Error::TimeOutOfRange(seconds));
    }
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let mut len = 0;
    let mut put = |value: i64, width: usize, sep: Option<u8>| {
        for i in (0..width).rev() {
            out[len + i] = b'0' + (value / 10i64.pow((width - 1 - i) as u32) % 10) as u8;
        }
        len += width;
        if let Some(sep) = sep {
            out[len] = sep;
            len += 1;
        }
    };
    put(year, 4, Some(b'-'));
    put(month, 2, Some(b'-'));
    put(day, 2, Some(b'T'));
    put(secs / 3600, 2, Some(b':'));
    put(secs / 60 % 60, 2, Some(b':'));
    match micros {
        Some(micros) => {
            put(secs % 60, 2, Some(b'.'));
            put(i64::from(micros), 6, Some(b'Z'));
        }
        None => put(secs % 60, 2, Some(b'Z')),
    }
    // Only ASCII digits and separators were written.
    std::str::from_utf8(&out[..len]).map_err(|_| Error::TimeOutOfRange(seconds))
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (the era-based method: 400-year eras of 146 097 days).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding, as Go's `encoding/json` writes `[]byte`.
pub(crate) fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        let mut buf = [0; 27];
        assert_eq!(rfc3339(0, None, &mut buf).unwrap(), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(1_764_506_096, None, &mut buf).unwrap(),
            "2025-11-30T12:34:56Z"
        );
        assert_eq!(
            rfc3339(951_782_400, Some(5), &mut buf).unwrap(),
            "2000-02-29T00:00:00.000005Z"
        );
        assert_eq!(
            rfc3339(GO_ZERO_SECONDS, None, &mut buf).unwrap(),
            "0001-01-01T00:00:00Z"
        );
        assert_eq!(
            rfc3339(MAX_SECONDS, Some(999_999), &mut buf).unwrap(),
            "9999-12-31T23:59:59.999999Z"
        );
        assert!(rfc3339(MAX_SECONDS + 1, None, &mut buf).is_err());
        assert!(rfc3339(i64::MIN, None, &mut buf).is_err());
    }

    #[test]
    fn base64_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
    }
}
