//! The one hash every replica must compute alike.
//!
//! Assignment decides which replica acts on which key, so two replicas (maybe
//! of different builds) must get the same numbers for the same strings.
//! `std`'s hashers are randomly seeded or allowed to change between Rust
//! releases, so the ring uses a fixed algorithm, pinned by test vectors:
//! 64-bit FNV-1a over the UTF-8 bytes, finished with MurmurHash3's `fmix64`
//! avalanche (FNV alone mixes the last bytes poorly, which would bias keys
//! that differ only in a numeric suffix). Changing either is a breaking
//! change of the ring protocol.

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8], mut hash: u64) -> u64 {
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

/// MurmurHash3's 64-bit finaliser: a bijection in which every input bit
/// flips about half of the output bits.
pub(crate) fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k
}

/// The stable 64-bit hash of a string.
pub(crate) fn hash_str(s: &str) -> u64 {
    fmix64(fnv1a(s.as_bytes(), FNV_OFFSET))
}

/// The stable hash of a sequence of strings, each ended by a zero byte so
/// that `["ab", "c"]` and `["a", "bc"]` differ.
pub(crate) fn hash_parts<'a>(parts: impl IntoIterator<Item = &'a str>) -> u64 {
    let mut hash = FNV_OFFSET;
    for part in parts {
        hash = fnv1a(part.as_bytes(), hash);
        hash = fnv1a(&[0], hash);
    }
    fmix64(hash)
}

/// The rendezvous weight of a key for a member: both already hashed, mixed
/// again so that the order of members differs from key to key.
pub(crate) fn weight(key_hash: u64, member_hash: u64) -> u64 {
    fmix64(key_hash ^ member_hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The ring protocol: these numbers must never change.
    #[test]
    fn hash_is_pinned() {
        assert_eq!(fnv1a(b"", FNV_OFFSET), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a", FNV_OFFSET), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar", FNV_OFFSET), 0x8594_4171_f739_67e8);
        assert_eq!(fmix64(0), 0);
        assert_eq!(hash_str("default/web"), PINNED_DEFAULT_WEB);
        assert_ne!(hash_parts(["ab", "c"]), hash_parts(["a", "bc"]));
    }

    const PINNED_DEFAULT_WEB: u64 = 0x043e_bfb5_ca03_7b82;
}
