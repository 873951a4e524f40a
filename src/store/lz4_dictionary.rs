//! LZ4 block compression against a dictionary hashed once.
//!
//! `lz4_flex` decompresses with a dictionary, and compresses with one too,
//! but its compressor hashes the whole dictionary into a freshly allocated
//! table on every call. For the compact cache, whose dictionary is the
//! same ≈ 20 KB for the store's lifetime and whose inputs are a few KB,
//! that was most of the compression's cost, and the 8 KB table allocated
//! per object made glibc's malloc consolidate its free lists on every
//! write (both showed among the wire runner's largest costs in a profile,
//! `benches/compare/NOTES.md`). [`Dictionary`] hashes the
//! dictionary once; [`Compressor`] keeps the table of the input's
//! positions between calls. The output is a plain LZ4 block, which
//! `lz4_flex::block::decompress_into_with_dict` reads with the same
//! dictionary (the tests check every output that way).
//!
//! The LZ4 block format: a sequence is a token (high nibble: literal
//! count, low nibble: match length − 4; 15 means more length bytes
//! follow, each adding up to 255), the literals, a two-byte little-endian
//! offset back into what came before (the dictionary counts as coming
//! just before the input), then the match length's extra bytes. The last
//! sequence is literals only; the last 5 bytes are always literals and no
//! match starts in the last 12 bytes.

/// Table size: 2^12 slots of `u32`.
const HASH_BITS: u32 = 12;
const SLOTS: usize = 1 << HASH_BITS;
/// The shortest match LZ4 encodes.
const MIN_MATCH: usize = 4;
/// No match starts within this many bytes of the end.
const MATCH_START_LIMIT: usize = 12;
/// The last bytes are always literals.
const LAST_LITERALS: usize = 5;
/// The farthest an offset reaches back.
pub(super) const MAX_OFFSET: usize = u16::MAX as usize;

/// The four bytes at `at`, read as one load: built from four indexed
/// bytes, the compiler kept four loads, four bounds checks and the shifts
/// joining them, in the loop that runs for every input byte.
fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let (word, _) = bytes[at..]
        .split_first_chunk::<4>()
        .expect("four bytes left at `at`");
    u32::from_le_bytes(*word)
}

fn hash(sequence: u32) -> usize {
    (sequence.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
}

/// A dictionary and the positions of its 4-byte sequences, hashed once.
pub(super) struct Dictionary {
    bytes: Box<[u8]>,
    /// Position + 1 of the last dictionary sequence with each hash; 0: none.
    table: Box<[u32]>,
}

impl Dictionary {
    /// Hashes `bytes`, of which only the last 64 KiB − 1 can be reached.
    pub(super) fn new(bytes: &[u8]) -> Self {
        let bytes: Box<[u8]> = bytes[bytes.len().saturating_sub(MAX_OFFSET)..].into();
        let mut table = vec![0u32; SLOTS].into_boxed_slice();
        for at in 0..bytes.len().saturating_sub(MIN_MATCH - 1) {
            // Later positions overwrite earlier ones: nearer is likelier.
            table[hash(read_u32(&bytes, at))] = at as u32 + 1;
        }
        Self { bytes, table }
    }

    /// The dictionary's bytes, for the decompressor.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// The input's hash table, kept between calls so that a call allocates
/// nothing but the output's growth.
pub(super) struct Compressor {
    table: Box<[u32]>,
}

impl Default for Compressor {
    fn default() -> Self {
        Self {
            table: vec![0u32; SLOTS].into_boxed_slice(),
        }
    }
}

impl Compressor {
    /// Appends `input` compressed against `dictionary` to `out`, as one LZ4
    /// block.
    pub(super) fn compress(&mut self, input: &[u8], dictionary: &Dictionary, out: &mut Vec<u8>) {
        self.table.fill(0);
        let dict = &dictionary.bytes[..];
        let mut anchor = 0;
        let mut at = 0;
        let start_limit = input.len().saturating_sub(MATCH_START_LIMIT);
        let end_limit = input.len().saturating_sub(LAST_LITERALS);
        // Input shorter than 13 bytes is all literals.
        while input.len() > MATCH_START_LIMIT && at < start_limit {
            let sequence = read_u32(input, at);
            let slot = hash(sequence);
            let earlier = self.table[slot] as usize;
            self.table[slot] = at as u32 + 1;

            // A match in the input itself, else one in the dictionary.
            let mut found = None;
            if earlier > 0 && at - (earlier - 1) <= MAX_OFFSET {
                let from = earlier - 1;
                if read_u32(input, from) == sequence {
                    let length = MIN_MATCH
                        + common_prefix(
                            &input[from + MIN_MATCH..],
                            &input[at + MIN_MATCH..end_limit],
                        );
                    found = Some((at - from, length));
                }
            }
            if found.is_none() {
                let in_dict = dictionary.table[slot] as usize;
                if in_dict > 0 {
                    let from = in_dict - 1;
                    let offset = dict.len() - from + at;
                    if offset <= MAX_OFFSET && read_u32(dict, from) == sequence {
                        // A match may run off the dictionary's end into the
                        // input's start, as the decompressor reads it.
                        let in_dict_length = MIN_MATCH
                            + common_prefix(
                                &dict[from + MIN_MATCH..],
                                &input[at + MIN_MATCH..end_limit],
                            );
                        let length = if from + in_dict_length == dict.len() {
                            in_dict_length
                                + common_prefix(input, &input[at + in_dict_length..end_limit])
                        } else {
                            in_dict_length
                        };
                        found = Some((offset, length));
                    }
                }
            }
            let Some((offset, length)) = found else {
                at += 1;
                continue;
            };
            write_sequence(out, &input[anchor..at], Some((offset, length)));
            at += length;
            anchor = at;
        }
        write_sequence(out, &input[anchor..], None);
    }
}

/// How many leading bytes `a` and `b` share, compared eight at a time:
/// an object's matches against the dictionary run to hundreds of bytes,
/// and comparing them a byte at a time was a large part of the
/// compressor's work.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let len = a.len().min(b.len());
    let (words_a, _) = a[..len].as_chunks::<8>();
    let (words_b, _) = b[..len].as_chunks::<8>();
    for (i, (x, y)) in words_a.iter().zip(words_b).enumerate() {
        // Read little-endian, the first differing byte is the lowest one.
        let differ = u64::from_le_bytes(*x) ^ u64::from_le_bytes(*y);
        if differ != 0 {
            return i * 8 + (differ.trailing_zeros() / 8) as usize;
        }
    }
    let at = words_a.len() * 8;
    at + a[at..len]
        .iter()
        .zip(&b[at..len])
        .take_while(|(x, y)| x == y)
        .count()
}

/// Writes `count` as a nibble's overflow: bytes of 255, then the rest.
fn write_length_rest(out: &mut Vec<u8>, mut count: usize) {
    while count >= 255 {
        out.push(255);
        count -= 255;
    }
    out.push(count as u8);
}

fn write_sequence(out: &mut Vec<u8>, literals: &[u8], found: Option<(usize, usize)>) {
    let literal_nibble = literals.len().min(15);
    let match_nibble = found.map_or(0, |(_, length)| (length - MIN_MATCH).min(15));
    out.push(((literal_nibble as u8) << 4) | match_nibble as u8);
    if literals.len() >= 15 {
        write_length_rest(out, literals.len() - 15);
    }
    out.extend_from_slice(literals);
    if let Some((offset, length)) = found {
        out.extend_from_slice(&(offset as u16).to_le_bytes());
        if length - MIN_MATCH >= 15 {
            write_length_rest(out, length - MIN_MATCH - 15);
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn round_trip(input: &[u8], dictionary: &[u8]) -> Vec<u8> {
        let dictionary = Dictionary::new(dictionary);
        let mut compressed = Vec::new();
        Compressor::default().compress(input, &dictionary, &mut compressed);
        let mut output = vec![0; input.len()];
        let written = lz4_flex::block::decompress_into_with_dict(
            &compressed,
            &mut output,
            dictionary.bytes(),
        )
        .expect("a valid LZ4 block");
        assert_eq!(written, input.len());
        assert_eq!(output, input);
        compressed
    }

    /// Text with repeats, the way encoded objects look.
    fn texty() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            prop_oneof![
                Just(&b"metadata"[..]),
                Just(&b"kube-system"[..]),
                Just(&b"\x00\x01\xff"[..]),
                Just(&b"a"[..]),
                Just(&b"status: Running, "[..]),
            ],
            0..400,
        )
        .prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #[test]
        fn common_prefix_counts_what_a_byte_by_byte_comparison_counts(
            a in prop::collection::vec(0u8..3, 0..40),
            b in prop::collection::vec(0u8..3, 0..40),
            shared in prop::collection::vec(any::<u8>(), 0..40),
        ) {
            // A shared start of any length, then bytes from a small
            // alphabet so the first difference falls anywhere in a word.
            let a = [&shared[..], &a[..]].concat();
            let b = [&shared[..], &b[..]].concat();
            let by_bytes = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            prop_assert_eq!(common_prefix(&a, &b), by_bytes);
            prop_assert_eq!(common_prefix(&b, &a), by_bytes);
        }

        #[test]
        fn any_input_decompresses_to_itself(
            input in prop_oneof![texty(), prop::collection::vec(any::<u8>(), 0..300)],
            dictionary in prop_oneof![texty(), prop::collection::vec(any::<u8>(), 0..300)],
        ) {
            round_trip(&input, &dictionary);
        }
    }

    #[test]
    fn edges_decompress_to_themselves() {
        let long_dictionary: Vec<u8> = (0..70_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for input in [
            &b""[..],
            b"a",
            b"abcdabcdabcd",
            b"abcdabcdabcda",
            &[7; 100],
            &[7; 100_000],
            &long_dictionary[..60_000],
        ] {
            for dictionary in [&b""[..], b"abc", &[7; 20], &long_dictionary] {
                round_trip(input, dictionary);
            }
        }
    }

    #[test]
    fn a_dictionary_like_the_input_shrinks_it() {
        let object = br#"{"metadata":{"name":"web-1","namespace":"default","labels":{"app":"web"}},"status":{"phase":"Running"}}"#;
        let other = br#"{"metadata":{"name":"web-2","namespace":"default","labels":{"app":"web"}},"status":{"phase":"Pending"}}"#;
        let alone = round_trip(object, b"").len();
        let with = round_trip(object, other).len();
        assert!(
            with * 3 < alone,
            "{with} bytes with the dictionary, {alone} without"
        );
    }
}
