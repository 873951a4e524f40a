//! Process memory as Linux reports it in `/proc/self/status`.

use std::fs;

/// Resident memory of this process, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Resident {
    /// `VmRSS`: resident now.
    pub now: u64,
    /// `VmHWM`: the peak since the process started or the peak was last reset.
    pub peak: u64,
}

/// Reads `VmRSS` and `VmHWM`; zeros where the kernel does not report them.
pub fn resident() -> Resident {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    Resident {
        now: status_field_bytes(&status, "VmRSS:").unwrap_or(0),
        peak: status_field_bytes(&status, "VmHWM:").unwrap_or(0),
    }
}

/// Sets the peak (`VmHWM`) back to the current resident size, so the peak
/// reported afterwards belongs to the measured run, not to loading the
/// workload. Returns false where the kernel refuses.
pub fn reset_peak() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Gives freed heap pages back to the kernel before a resident-size reading,
/// as the Go runner does with `debug.FreeOSMemory`, so both read live memory
/// rather than their allocator's leftovers.
pub fn release_free_memory() {
    // SAFETY: malloc_trim only walks glibc's own free lists; it takes no
    // pointers from us and is safe to call from any thread at any time.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::malloc_trim(0);
    }
}

fn status_field_bytes(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with(field))?;
    let kib: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_lines() {
        let status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
        assert_eq!(status_field_bytes(status, "VmRSS:"), Some(1024 * 1024));
        assert_eq!(status_field_bytes(status, "VmHWM:"), Some(2048 * 1024));
        assert_eq!(status_field_bytes(status, "VmSwap:"), None);
    }

    #[test]
    fn reads_this_process() {
        let memory = resident();
        assert!(memory.now > 0);
        assert!(memory.peak >= memory.now);
    }
}
