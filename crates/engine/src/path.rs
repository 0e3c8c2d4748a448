//! Paths compared as the kernel and the runtimes compare them, lexically:
//! shared by the engine and the system layer, which must not import each
//! other. Pure.

/// Is `dest` (cleaned) strictly below `dir` (cleaned)?
pub fn is_below(dest: &str, dir: &str) -> bool {
    dest.len() > dir.len() && dest.starts_with(dir) && dest.as_bytes()[dir.len()] == b'/'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_below_needs_a_separator() {
        assert!(is_below("/sys/fs", "/sys"));
        assert!(!is_below("/sys", "/sys"));
        assert!(!is_below("/sysfoo", "/sys"));
    }
}
