//! The one stable hash of the project: FNV-1a, 64 bits. It names the rro
//! probe's cache files and fingerprints what install and deploy wrote.
//! std's hasher may change between releases; these values are kept on
//! disk. A fingerprint, not a defence: whoever can edit a marked file can
//! edit its marker too.

/// FNV-1a, 64 bits, of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::fnv1a;

    #[test]
    fn known_values() {
        // The published FNV-1a 64 test vectors.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
