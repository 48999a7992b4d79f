//! A small mutation fuzzer on stable Rust, for the parsers of the request path. Each target starts
//! from a corpus of valid and near-valid inputs and runs a bounded number of seeded mutations of them (byte edits,
//! inserted "interesting" fragments, splices of two inputs, repetitions); a panic fails the test with the input that
//! caused it, and each target also checks its own properties (a parsed selector prints back to the same selector...).
//!
//! It is not coverage-guided, as the cargo-fuzz targets of `fuzz/` (libFuzzer, nightly Rust) are; where nightly
//! cannot be had, `scripts/fuzz.sh` runs those targets' bodies with this engine instead. `FUZZ_ITERATIONS` sets the
//! number of inputs per target (default [`DEFAULT_ITERATIONS`]), or `FUZZ_MUTATION_SECONDS` the time per target,
//! and `FUZZ_SEED` the seed, so a longer run is one environment variable away and a failure replays exactly.

/// Inputs per target when `FUZZ_ITERATIONS` is not set: a few seconds in a debug build for every target together.
pub const DEFAULT_ITERATIONS: usize = 20_000;

/// Fragments that parsers of Kubernetes strings treat specially.
const INTERESTING: &[&str] = &[
    "",
    ",",
    "=",
    "==",
    "!=",
    "!",
    "(",
    ")",
    " in ",
    " notin ",
    "in",
    "notin",
    "\\",
    "\\,",
    "\\=",
    "/",
    "..",
    ".",
    "-",
    "_",
    "%",
    "%2F",
    "%zz",
    "?",
    "&",
    "#",
    "[",
    "]",
    "{",
    "}",
    ":",
    "\"",
    "'",
    " ",
    "\t",
    "\n",
    "\0",
    "é",
    "\u{202e}",
    "0",
    "-1",
    "9223372036854775807",
    "9223372036854775808",
    "1e999999",
    "123456789012345678901234567890",
    "a",
    "metadata.name",
    "metadata.namespace",
    "x/y",
    "example.com/key",
    "apis",
    "api",
    "namespaces",
    "tenants",
    "v1",
    "status",
    "~",
    "null",
    "true",
    "[[[[",
    "]]]]",
    "{{{{",
    "}}}}",
];

/// A seeded pseudo-random source (SplitMix64).
pub struct Rng(u64);

impl Rng {
    /// A source with this seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// One mutation of `input`, drawing on the other corpus entries for splices.
fn mutate(rng: &mut Rng, input: &[u8], corpus: &[&str]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..=rng.below(4) {
        let at = if out.is_empty() { 0 } else { rng.below(out.len() + 1) };
        match rng.below(7) {
            0 if !out.is_empty() => {
                let end = (at + rng.below(8) + 1).min(out.len());
                out.drain(at.min(end)..end);
            }
            1 => {
                let fragment = INTERESTING[rng.below(INTERESTING.len())];
                out.splice(at..at, fragment.bytes());
            }
            2 => {
                let other = corpus[rng.below(corpus.len())].as_bytes();
                let from = rng.below(other.len() + 1);
                out.splice(at..at, other[from..].iter().copied());
            }
            3 if !out.is_empty() => {
                let i = rng.below(out.len());
                out[i] = rng.next_u64() as u8;
            }
            4 if !out.is_empty() => {
                let end = (at + rng.below(16) + 1).min(out.len());
                let piece = out[at.min(end)..end].to_vec();
                for _ in 0..rng.below(64) {
                    out.splice(at..at, piece.iter().copied());
                }
            }
            5 => out.truncate(at),
            _ => {
                let fragment = INTERESTING[rng.below(INTERESTING.len())];
                out.extend_from_slice(fragment.as_bytes());
            }
        }
    }
    out
}

/// Runs `target` on the corpus and on seeded mutations of it; a panic fails with the input (as bytes and as lossy
/// text) and the seed and index that replay it.
pub fn fuzz(name: &str, corpus: &[&str], mut target: impl FnMut(&[u8])) {
    let iterations = std::env::var("FUZZ_ITERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_ITERATIONS);
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0x5EED_u64);
    // With a time per target, as many inputs as fit in it (the iteration count no longer applies).
    let deadline = std::env::var("FUZZ_MUTATION_SECONDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .map(|secs| std::time::Instant::now() + std::time::Duration::from_secs(secs));
    let iterations = if deadline.is_some() { usize::MAX } else { iterations };
    let mut rng = Rng::new(seed);
    let inputs = corpus.iter().map(|c| c.as_bytes().to_vec()).chain(
        (0..iterations)
            .take_while(|_| deadline.is_none_or(|d| std::time::Instant::now() < d))
            .map(|_| {
                let base = corpus[rng.below(corpus.len())].as_bytes();
                mutate(&mut rng, base, corpus)
            }),
    );
    for (i, input) in inputs.enumerate() {
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target(&input)));
        if let Err(panic) = ran {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!(
                "fuzz target {name}: input {i} (FUZZ_SEED={seed}) failed: {message}\ninput: {:?}\nbytes: {input:?}",
                String::from_utf8_lossy(&input)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::{FieldSelector, LabelSelector};

    #[test]
    fn fuzz_label_selector_parser() {
        let corpus = [
            "env=prod",
            "env in (prod,staging),tier!=db,!canary",
            "a notin (x),b,c==d",
            "example.com/key=value,x>1,y<2",
            "",
        ];
        fuzz("labels", &corpus, |input| {
            let Ok(text) = std::str::from_utf8(input) else { return };
            if let Ok(selector) = LabelSelector::parse(text) {
                // What parses prints back to a selector that parses to the same requirements.
                let printed = selector.to_string();
                let again = LabelSelector::parse(&printed)
                    .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which does not parse: {e}"));
                assert_eq!(again.to_string(), printed, "{text:?}");
            }
        });
    }

    #[test]
    fn fuzz_field_selector_parser() {
        let corpus = [
            "metadata.name=foo",
            "metadata.name=foo,status.phase!=Running",
            "spec.x==a\\,b",
            "metadata.namespace!=",
            "",
        ];
        fuzz("fields", &corpus, |input| {
            let Ok(text) = std::str::from_utf8(input) else { return };
            if let Ok(selector) = FieldSelector::parse(text) {
                let printed = selector.to_string();
                let again = FieldSelector::parse(&printed)
                    .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which does not parse: {e}"));
                assert_eq!(again.to_string(), printed, "{text:?}");
            }
        });
    }

    /// The fuzzer finds a planted bug: it is not a test that cannot fail.
    #[test]
    fn the_fuzzer_reports_the_input_that_panics() {
        let found = std::panic::catch_unwind(|| {
            fuzz("planted", &["ab"], |input| assert!(!input.contains(&b')')));
        });
        let message = found.expect_err("the planted bug is found");
        let message = message.downcast_ref::<String>().expect("a message");
        assert!(message.contains("fuzz target planted"), "{message}");
    }
}
