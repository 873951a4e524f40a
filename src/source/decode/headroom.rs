//! Room in a thread's heap, made before it decodes a piece of a big batch.
//!
//! glibc's malloc gives each thread an arena, and an arena other than the
//! main one grows its heap with `mprotect`, by just the room the allocation
//! at hand lacks: about one system call per page. A thread filling a
//! fresh cache (the initial list, a relist) grows its heap by gigabytes that
//! way, hundreds of thousands of calls, with the threads that decode
//! contending for the process's memory map.
//!
//! So before a thread decodes a piece of a big batch, it allocates
//! blocks adding up to about what the piece's objects will take and frees
//! them at once. The heap then grows a block at a time, and the room stays
//! usable: when glibc gives the pages of a heap's free top back to the
//! kernel it keeps them mapped read-write (unless the system forbids
//! overcommitting memory), so filling them again takes page faults (as any
//! fresh memory does) but no `mprotect`. It pays under glibc's malloc and
//! costs nothing measurable under mimalloc: `benches/compare/NOTES.md`
//! ("Decoding: the measurements behind `source/decode`", and "The room
//! made before each piece" with the pieces on the runtime's workers) has
//! the calls and the CPU time with and without it.
//!
//! The blocks are smaller than glibc's smallest mmap threshold (128 KiB),
//! so they come from the arena whatever the process allocated before, and
//! nothing is written to them but the allocator's own headers, so they take
//! no memory. Under another allocator they cost a few allocations per chunk
//! of hundreds of objects.

/// The size of one block: under glibc's smallest mmap threshold.
const BLOCK: usize = 120 * 1024;

/// A decoded object takes about this many times the size of its JSON
/// (`benches/compare/NOTES.md`, "Decoding: the measurements behind
/// `source/decode`", has the figures of a realistic Pod, with and without
/// managedFields).
const GROWTH: usize = 8;

/// The most room made for one chunk.
const MAX_ROOM: usize = 16 * 1024 * 1024;

/// The least JSON, in bytes, worth making room for: a chunk that small
/// grows the heap by little, and the watch's small batches mostly reuse
/// memory freed by the objects they replace.
const MIN_JSON: usize = 128 * 1024;

/// How much room to make before decoding `json` bytes of objects.
pub(crate) fn room_for(json: usize) -> usize {
    if json < MIN_JSON {
        return 0;
    }
    json.saturating_mul(GROWTH).min(MAX_ROOM)
}

/// Grows the calling thread's heap by about `room_for(json)` bytes, in
/// blocks, and frees them again.
pub(crate) fn make_room(json: usize) {
    let blocks = room_for(json).div_ceil(BLOCK);
    if blocks == 0 {
        return;
    }
    let room: Vec<Vec<u8>> = (0..blocks).map(|_| Vec::with_capacity(BLOCK)).collect();
    // Unused allocations may be optimised away; these are the point.
    std::hint::black_box(&room);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_follows_the_chunk_and_is_capped() {
        assert_eq!(room_for(0), 0);
        assert_eq!(room_for(MIN_JSON - 1), 0);
        assert_eq!(room_for(MIN_JSON), MIN_JSON * GROWTH);
        assert_eq!(room_for(1 << 20), 8 << 20);
        assert_eq!(room_for(100 << 20), MAX_ROOM);
        assert_eq!(room_for(usize::MAX), MAX_ROOM);
        const { assert!(BLOCK < 128 * 1024) };
    }
}
