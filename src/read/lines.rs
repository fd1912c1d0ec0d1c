//! Splitting bytes that arrive in chunks (a read buffer, a live append)
//! into whole lines, for the append-only formats' indexers: a line split
//! across chunks is joined, and one growing past a cap is read past and
//! reported by its length instead of being held.

/// A completed line, as [`split`] hands it on.
pub enum Piece<'a> {
    /// Its bytes, without the newline.
    Line(&'a [u8]),
    /// A line over the cap: how many bytes it took, newline included.
    Oversize(u64),
}

/// Feeds `chunk`: every line it completes goes to `out`, in order; the
/// bytes after the last newline stay in `pending` (or are counted in
/// `oversize` once past `cap`). Returns how many lines completed.
pub fn split(
    pending: &mut Vec<u8>,
    oversize: &mut Option<u64>,
    chunk: &[u8],
    cap: usize,
    mut out: impl FnMut(Piece<'_>),
) -> usize {
    let mut n = 0;
    let mut start = 0;
    for nl in memchr::memchr_iter(b'\n', chunk) {
        let piece = &chunk[start..nl];
        if let Some(so_far) = oversize.take() {
            out(Piece::Oversize(so_far + piece.len() as u64 + 1));
        } else if pending.is_empty() {
            out(Piece::Line(piece));
        } else {
            let mut line = std::mem::take(pending);
            line.extend_from_slice(piece);
            out(Piece::Line(&line));
        }
        n += 1;
        start = nl + 1;
    }
    let rest = &chunk[start..];
    match oversize {
        Some(so_far) => *so_far += rest.len() as u64,
        None => {
            pending.extend_from_slice(rest);
            if pending.len() > cap {
                *oversize = Some(pending.len() as u64);
                *pending = Vec::new();
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&[u8]], cap: usize) -> (Vec<String>, Vec<u8>, Option<u64>) {
        let (mut pending, mut oversize) = (Vec::new(), None);
        let mut got = Vec::new();
        for c in chunks {
            split(&mut pending, &mut oversize, c, cap, |p| {
                got.push(match p {
                    Piece::Line(l) => String::from_utf8_lossy(l).into_owned(),
                    Piece::Oversize(n) => format!("<{n}>"),
                })
            });
        }
        (got, pending, oversize)
    }

    #[test]
    fn lines_across_chunks_join_and_long_ones_are_read_past() {
        let (got, pending, over) = run(&[b"ab\ncd", b"ef\n\ngh"], 100);
        assert_eq!(got, ["ab", "cdef", ""]);
        assert_eq!((pending.as_slice(), over), (&b"gh"[..], None));
        // Past the cap: counted, not held; the next line is whole again.
        let (got, pending, over) = run(&[b"x\n0123", b"456789", b"ab\ny\nzz"], 5);
        assert_eq!(got, ["x", "<13>", "y"]);
        assert_eq!((pending.as_slice(), over), (&b"zz"[..], None));
        let (_, pending, over) = run(&[b"0123456"], 5);
        assert_eq!((pending.len(), over), (0, Some(7)));
    }
}
