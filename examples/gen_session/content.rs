//! Deterministic filler text for generated sessions: prose, code, logs and
//! base64, cut from corpora built once per seed so that large bodies cost a
//! memcpy, not a random draw per character.

pub use worldline::demo::rng::Rng;

/// Mixed into the user's seed so the generator's stream differs from the
/// demo's for the same number.
pub const SEED_SALT: u64 = 0x5eed_5eed_5eed_5eed;

const WORDS: &[&str] = &[
    "the",
    "function",
    "returns",
    "a",
    "value",
    "when",
    "index",
    "is",
    "out",
    "of",
    "range",
    "so",
    "we",
    "should",
    "check",
    "bounds",
    "first",
    "then",
    "read",
    "file",
    "and",
    "parse",
    "each",
    "line",
    "into",
    "record",
    "test",
    "fails",
    "because",
    "expected",
    "output",
    "differs",
    "let",
    "me",
    "look",
    "at",
    "module",
    "again",
    "error",
    "handling",
    "path",
    "config",
    "build",
    "cache",
    "update",
    "dependency",
    "version",
    "instead",
    "which",
    "means",
    "fix",
    "is",
    "simple",
    "rename",
    "field",
    "struct",
    "trait",
    "impl",
    "async",
    "await",
    "lock",
    "thread",
    "world",
    "line",
    "checkpoint",
    "revert",
    "context",
    "message",
    "tool",
    "call",
    "result",
    "naïve",
    "café",
    "—",
    "→",
    "“quoted”",
    "日本語",
    "λ",
    "ok",
    "done",
    "next",
    "step",
];

const IDENTS: &[&str] = &[
    "reader",
    "index",
    "offset",
    "buf",
    "line",
    "record",
    "parse_head",
    "hash",
    "graph",
    "node",
    "edge",
    "family",
    "session",
    "tail",
    "chunk",
    "len",
    "path",
    "err",
    "meta",
    "state",
];

/// Text corpora cut into bodies of a wanted length.
pub struct Corpus {
    prose: String,
    code: String,
    log: String,
}

/// Each corpus is this long; bigger bodies repeat it.
const CORPUS_LEN: usize = 1 << 20;

impl Corpus {
    pub fn new(rng: &mut Rng) -> Corpus {
        let mut prose = String::with_capacity(CORPUS_LEN + 64);
        while prose.len() < CORPUS_LEN {
            let words = rng.range(6, 24);
            for i in 0..words {
                if i > 0 {
                    prose.push(' ');
                }
                let word: &&str = rng.pick(WORDS);
                prose.push_str(word);
            }
            let end: &&str = rng.pick(&[". ", ". ", "? ", ".\n\n", ": `x < y`.\n- "]);
            prose.push_str(end);
        }
        let mut code = String::with_capacity(CORPUS_LEN + 256);
        while code.len() < CORPUS_LEN {
            let (a, b) = (rng.pick(IDENTS), rng.pick(IDENTS));
            let n = rng.range(0, 999);
            let line = match rng.range(0, 6) {
                0 => format!("pub fn {a}_{n}({b}: &str) -> Result<usize, Error> {{\n"),
                1 => format!("    let {a} = {b}.get({n}).ok_or(\"missing {a}\")?;\n"),
                2 => format!("    // {a} before {b}: keeps the order stable\n"),
                3 => {
                    format!("    if {a}.len() > {n} {{ return Err(\"{b}\\ttoo long\".into()); }}\n")
                }
                4 => "}\n\n".to_string(),
                _ => format!("    {a}.push_str(&format!(\"{{}}-{n}\", {b}));\n"),
            };
            code.push_str(&line);
        }
        let mut log = String::with_capacity(CORPUS_LEN + 256);
        let mut t = 0u64;
        while log.len() < CORPUS_LEN {
            t += rng.range(1, 500);
            let level = *rng.pick(&["INFO", "INFO", "DEBUG", "WARN", "ERROR"][..]);
            let (a, n) = (rng.pick(IDENTS), rng.range(0, 100_000));
            log.push_str(&format!(
                "2026-05-{:02}T{:02}:{:02}:{:02}.{:03}Z {level} {a}: processed {n} items in {}ms\n",
                1 + t / 86_400_000 % 28,
                t / 3_600_000 % 24,
                t / 60_000 % 60,
                t / 1000 % 60,
                t % 1000,
                n % 997
            ));
        }
        Corpus { prose, code, log }
    }

    pub fn prose(&self, rng: &mut Rng, len: usize) -> String {
        cut(&self.prose, rng, len)
    }

    pub fn code(&self, rng: &mut Rng, len: usize) -> String {
        cut(&self.code, rng, len)
    }

    pub fn log(&self, rng: &mut Rng, len: usize) -> String {
        cut(&self.log, rng, len)
    }
}

/// About `len` bytes of `corpus` from a random start, wrapping around, cut
/// on character boundaries.
fn cut(corpus: &str, rng: &mut Rng, len: usize) -> String {
    let mut out = String::with_capacity(len + 8);
    let mut start = floor_boundary(corpus, rng.range(0, corpus.len() as u64) as usize);
    while out.len() < len {
        let want = len - out.len();
        let end = floor_boundary(corpus, (start + want).min(corpus.len()));
        if end <= start {
            // Not even one character fits before the wanted end.
            break;
        }
        out.push_str(&corpus[start..end]);
        start = if end >= corpus.len() { 0 } else { end };
    }
    out
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// `n` bytes of base64 text (a whole number of quads), as in a data URL.
pub fn base64(rng: &mut Rng, n: usize) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let n = n / 4 * 4;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        // Ten 6-bit digits per draw keep a 50 MB image under a second.
        let mut x = rng.next_u64();
        for _ in 0..10 {
            if out.len() == n {
                break;
            }
            out.push(ALPHABET[(x & 63) as usize]);
            x >>= 6;
        }
    }
    // Only ASCII was pushed.
    String::from_utf8(out).unwrap_or_default()
}
