//! A minimal, allocation-free JSON scanner for small documents parsed in hot loops.
//!
//! It reads one value at a time from a byte slice: objects key by key, strings (unescaped only
//! when they contain escapes), numbers as their text, literals, and skips values it is not asked
//! to interpret. Used for per-file statistics ("Per-file Statistics"), where a general JSON
//! reader spends most of its time building an intermediate tape.

use std::borrow::Cow;

/// Why a document did not scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanError(pub &'static str);

/// Result of the scanner.
pub type ScanResult<T> = Result<T, ScanError>;

/// A scalar JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar<'a> {
    Null,
    Bool(bool),
    /// The number's text, as written.
    Number(&'a str),
    String(Cow<'a, str>),
}

/// A cursor over a JSON document.
#[derive(Debug, Clone)]
pub struct Scanner<'a> {
    src: &'a str,
    text: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    /// A scanner at the start of `text`.
    pub fn new(text: &'a str) -> Self {
        Scanner {
            src: text,
            text: text.as_bytes(),
            pos: 0,
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b) = self.text.get(self.pos) {
            if matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.text.get(self.pos).copied()
    }

    fn expect(&mut self, byte: u8) -> ScanResult<()> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(ScanError("unexpected character"))
        }
    }

    /// Whether only whitespace remains.
    pub fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }

    /// Enters an object; `Ok(false)` when the value is `null` instead.
    pub fn begin_object(&mut self) -> ScanResult<bool> {
        match self.peek() {
            Some(b'{') => {
                self.pos += 1;
                Ok(true)
            }
            Some(b'n') => {
                self.literal(b"null")?;
                Ok(false)
            }
            _ => Err(ScanError("expected an object")),
        }
    }

    /// The next key of the object entered last (`None` at its end). `first` tells whether this is
    /// the first call for the object.
    pub fn next_key(&mut self, first: bool) -> ScanResult<Option<Cow<'a, str>>> {
        match self.peek() {
            Some(b'}') => {
                self.pos += 1;
                return Ok(None);
            }
            Some(b',') if !first => self.pos += 1,
            Some(b'"') if first => {}
            _ => return Err(ScanError("expected a key")),
        }
        let key = self.string()?;
        self.expect(b':')?;
        Ok(Some(key))
    }

    /// Consumes the next key of the object entered last (and its colon) when it is exactly
    /// `name` as written (no escapes); otherwise leaves the cursor where it was and returns
    /// false. `first` as for [`Scanner::next_key`].
    pub fn try_key(&mut self, first: bool, name: &[u8]) -> bool {
        let start = self.pos;
        let matched = (|| {
            if !first {
                if self.peek() != Some(b',') {
                    return false;
                }
                self.pos += 1;
            }
            if self.peek() != Some(b'"') {
                return false;
            }
            let open = self.pos + 1;
            let close = open + name.len();
            if self.text.get(open..close) != Some(name) || self.text.get(close) != Some(&b'"') {
                return false;
            }
            self.pos = close + 1;
            if self.peek() != Some(b':') {
                return false;
            }
            self.pos += 1;
            true
        })();
        if !matched {
            self.pos = start;
        }
        matched
    }

    fn literal(&mut self, word: &[u8]) -> ScanResult<()> {
        if self.text[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(ScanError("invalid literal"))
        }
    }

    fn string(&mut self) -> ScanResult<Cow<'a, str>> {
        self.expect(b'"')?;
        let start = self.pos;
        let mut escaped = false;
        loop {
            let rest = self.text.get(self.pos..).unwrap_or_default();
            match find_quote_or_backslash(rest) {
                None => return Err(ScanError("unterminated string")),
                Some(i) if rest[i] == b'"' => {
                    self.pos += i;
                    break;
                }
                Some(i) => {
                    escaped = true;
                    self.pos += i + 2;
                }
            }
        }
        self.finish_string(start, escaped)
    }

    /// The string from `start` to the closing quote at the cursor, which it steps over.
    fn finish_string(&mut self, start: usize, escaped: bool) -> ScanResult<Cow<'a, str>> {
        // Quotes are ASCII, so both ends are character boundaries of the (valid UTF-8) text.
        let raw = self
            .src
            .get(start..self.pos)
            .ok_or(ScanError("unterminated string"))?;
        self.pos += 1;
        if escaped {
            unescape(raw).map(Cow::Owned)
        } else {
            Ok(Cow::Borrowed(raw))
        }
    }

    /// Reads a string value and appends its decoded bytes (UTF-8) to `out`. It copies
    /// eight bytes at a time between escapes, which suits text that is itself escaped JSON
    /// (statistics), with an escape every few characters.
    pub fn string_into_bytes(&mut self, out: &mut Vec<u8>) -> ScanResult<()> {
        self.expect(b'"')?;
        let text = self.text;
        let mut i = self.pos;
        loop {
            while let Some(c) = text.get(i..i + 8) {
                let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
                let special = zero_bytes(w ^ QUOTES) | zero_bytes(w ^ BACKSLASHES);
                if special == 0 {
                    out.extend_from_slice(c);
                    i += 8;
                } else {
                    let k = (special.trailing_zeros() / 8) as usize;
                    out.extend_from_slice(&c[..k]);
                    i += k;
                    break;
                }
            }
            match text.get(i) {
                None => return Err(ScanError("unterminated string")),
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    let simple = match text.get(i + 1) {
                        Some(b'"') => b'"',
                        Some(b'\\') => b'\\',
                        Some(b'/') => b'/',
                        Some(b'b') => 8,
                        Some(b'f') => 12,
                        Some(b'n') => b'\n',
                        Some(b'r') => b'\r',
                        Some(b't') => b'\t',
                        Some(b'u') => 0,
                        _ => return Err(ScanError("invalid escape")),
                    };
                    if simple != 0 {
                        out.push(simple);
                        i += 2;
                        continue;
                    }
                    // `\uXXXX`, possibly a surrogate pair: decoded by the general routine.
                    let high_surrogate = text.get(i + 2..i + 4).is_some_and(|h| {
                        matches!(h[0], b'd' | b'D')
                            && matches!(h[1], b'8' | b'9' | b'a' | b'b' | b'A' | b'B')
                    });
                    let end = (i + if high_surrogate { 12 } else { 6 }).min(text.len());
                    let run = self.src.get(i..end).ok_or(ScanError("invalid escape"))?;
                    out.extend_from_slice(unescape(run)?.as_bytes());
                    i = end;
                }
                // Fewer than eight bytes remain.
                Some(&c) => {
                    out.push(c);
                    i += 1;
                }
            }
        }
    }

    /// Whether the next value is `null` (which is then consumed).
    pub fn null(&mut self) -> ScanResult<bool> {
        if self.peek() == Some(b'n') {
            self.literal(b"null")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn number(&mut self) -> ScanResult<&'a str> {
        let start = self.pos;
        while let Some(b) = self.text.get(self.pos) {
            if matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                self.pos += 1;
            } else {
                break;
            }
        }
        if start == self.pos {
            return Err(ScanError("expected a number"));
        }
        self.src
            .get(start..self.pos)
            .ok_or(ScanError("invalid number"))
    }

    /// The next value when it is an integer written as plain decimal digits (optionally
    /// negative) that fits an `i64`: consumed and returned. `None`, with nothing consumed, for
    /// any other value (fractions, exponents, strings, overflow...), which the caller then reads
    /// with [`Scanner::scalar`]: the result is what parsing that number's text would give.
    pub fn integer(&mut self) -> Option<i64> {
        self.skip_ws();
        let text = self.text;
        let mut i = self.pos;
        let negative = text.get(i) == Some(&b'-');
        if negative {
            i += 1;
        }
        let start = i;
        let mut value = 0i64;
        while let Some(&c) = text.get(i) {
            if !c.is_ascii_digit() {
                break;
            }
            let digit = i64::from(c - b'0');
            // Accumulated with the number's sign, so that i64::MIN fits.
            value = value.checked_mul(10)?;
            value = if negative {
                value.checked_sub(digit)?
            } else {
                value.checked_add(digit)?
            };
            i += 1;
        }
        if i == start || matches!(text.get(i), Some(b'.' | b'e' | b'E' | b'+' | b'-')) {
            return None;
        }
        self.pos = i;
        Some(value)
    }

    /// Whether the next value is a string (nothing is consumed).
    pub fn at_string(&mut self) -> bool {
        self.peek() == Some(b'"')
    }

    /// Reads a scalar; `Ok(None)` (and the value skipped) when it is an object or array.
    pub fn scalar(&mut self) -> ScanResult<Option<Scalar<'a>>> {
        match self.peek() {
            Some(b'"') => Ok(Some(Scalar::String(self.string()?))),
            Some(b't') => self.literal(b"true").map(|_| Some(Scalar::Bool(true))),
            Some(b'f') => self.literal(b"false").map(|_| Some(Scalar::Bool(false))),
            Some(b'n') => self.literal(b"null").map(|_| Some(Scalar::Null)),
            Some(b'{' | b'[') => self.skip_value().map(|_| None),
            Some(_) => Ok(Some(Scalar::Number(self.number()?))),
            None => Err(ScanError("unexpected end")),
        }
    }

    /// Skips one value of any kind.
    pub fn skip_value(&mut self) -> ScanResult<()> {
        match self.peek() {
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                loop {
                    match self.text.get(self.pos) {
                        None => return Err(ScanError("unterminated value")),
                        Some(b'{' | b'[') => {
                            depth += 1;
                            self.pos += 1;
                        }
                        Some(b'}' | b']') => {
                            depth -= 1;
                            self.pos += 1;
                            if depth == 0 {
                                return Ok(());
                            }
                        }
                        Some(b'"') => {
                            self.string()?;
                        }
                        Some(_) => self.pos += 1,
                    }
                }
            }
            _ => self.scalar().map(|_| ()),
        }
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;
const QUOTES: u64 = ONES * b'"' as u64;
const BACKSLASHES: u64 = ONES * b'\\' as u64;

/// The bytes of `x` that are zero, flagged by their high bit. The lowest flag is exact (flags
/// above a zero byte may be spurious), which is all a search for the first one needs.
#[inline]
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGH
}

/// The index of the first `"` or `\\` in `b`. Strings in the log are mostly short (keys,
/// numbers in statistics, runs between escapes), where eight bytes at a time in a register beat
/// setting up a vector search; long ones go to `memchr`.
#[inline]
fn find_quote_or_backslash(b: &[u8]) -> Option<usize> {
    let head = b.len().min(64);
    let mut chunks = b[..head].chunks_exact(8);
    let mut offset = 0;
    for c in chunks.by_ref() {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        let found = zero_bytes(w ^ QUOTES) | zero_bytes(w ^ BACKSLASHES);
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    if let Some(i) = chunks
        .remainder()
        .iter()
        .position(|&c| c == b'"' || c == b'\\')
    {
        return Some(offset + i);
    }
    memchr::memchr2(b'"', b'\\', &b[head..]).map(|i| head + i)
}

fn hex4(chars: &mut std::str::Chars<'_>) -> ScanResult<u32> {
    let mut v = 0u32;
    for _ in 0..4 {
        let d = chars
            .next()
            .and_then(|c| c.to_digit(16))
            .ok_or(ScanError("invalid \\u escape"))?;
        v = v * 16 + d;
    }
    Ok(v)
}

fn unescape(raw: &str) -> ScanResult<String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('"') => out.push('"'),
            Some('\\') => out.push('\\'),
            Some('/') => out.push('/'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('u') => {
                let hi = hex4(&mut chars)?;
                let code = if (0xD800..0xDC00).contains(&hi) {
                    if chars.next() != Some('\\') || chars.next() != Some('u') {
                        return Err(ScanError("unpaired surrogate"));
                    }
                    let lo = hex4(&mut chars)?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return Err(ScanError("unpaired surrogate"));
                    }
                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                } else {
                    hi
                };
                out.push(char::from_u32(code).ok_or(ScanError("invalid code point"))?);
            }
            _ => return Err(ScanError("invalid escape")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn objects_scalars_and_skips() {
        let mut s = Scanner::new(
            r#" {"a": 1.5e3, "b" : "x\"y\u00e9\ud83d\ude00", "c": [1, {"d": "}"}], "e": null, "f": true} "#,
        );
        assert!(s.begin_object().unwrap());
        assert_eq!(s.next_key(true).unwrap().as_deref(), Some("a"));
        assert_eq!(s.scalar().unwrap(), Some(Scalar::Number("1.5e3")));
        assert_eq!(s.next_key(false).unwrap().as_deref(), Some("b"));
        assert_eq!(
            s.scalar().unwrap(),
            Some(Scalar::String(Cow::Owned("x\"yé😀".to_string())))
        );
        assert_eq!(s.next_key(false).unwrap().as_deref(), Some("c"));
        assert_eq!(s.scalar().unwrap(), None);
        assert_eq!(s.next_key(false).unwrap().as_deref(), Some("e"));
        assert_eq!(s.scalar().unwrap(), Some(Scalar::Null));
        assert_eq!(s.next_key(false).unwrap().as_deref(), Some("f"));
        assert_eq!(s.scalar().unwrap(), Some(Scalar::Bool(true)));
        assert_eq!(s.next_key(false).unwrap(), None);
        assert!(s.at_end());
    }

    #[test]
    fn integers_are_read_in_place_or_left_alone() {
        for (text, expected) in [
            ("0", Some(0)),
            ("-17 ", Some(-17)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
            ("1.5", None),
            ("1e3", None),
            ("-", None),
            ("\"5\"", None),
            ("null", None),
        ] {
            let mut sc = Scanner::new(text);
            assert_eq!(sc.integer(), expected, "{text}");
            if expected.is_none() {
                // Nothing consumed: the general reader sees the whole value.
                assert!(sc.scalar().is_ok() || text == "-", "{text}");
            } else {
                assert!(sc.at_end(), "{text}");
            }
        }
    }

    #[test]
    fn expected_keys_are_taken_in_place() {
        let mut s = Scanner::new(r#"{"ab" : 1, "c\u0064": 2, "e": 3}"#);
        assert!(s.begin_object().unwrap());
        assert!(!s.try_key(true, b"a"));
        assert!(!s.try_key(true, b"abc"));
        assert!(s.try_key(true, b"ab"));
        assert_eq!(s.scalar().unwrap(), Some(Scalar::Number("1")));
        // An escaped key is not matched in place; the general path decodes it.
        assert!(!s.try_key(false, b"cd"));
        assert_eq!(s.next_key(false).unwrap().as_deref(), Some("cd"));
        assert_eq!(s.scalar().unwrap(), Some(Scalar::Number("2")));
        assert!(
            !s.try_key(true, b"e"),
            "a comma is required after the first key"
        );
        assert!(s.try_key(false, b"e"));
        assert_eq!(s.scalar().unwrap(), Some(Scalar::Number("3")));
        assert!(!s.try_key(false, b"f"));
        assert_eq!(s.next_key(false).unwrap(), None);
        assert!(s.at_end());
    }

    #[test]
    fn malformed_input_is_an_error() {
        for bad in [
            r#"{"a" 1}"#,
            r#"{"a": "x"#,
            r#"{"a": tru}"#,
            r#"{"a": 1,}"#,
            r#"{"a": "\q"}"#,
        ] {
            let mut s = Scanner::new(bad);
            let mut result = s.begin_object().map(|_| ());
            let mut first = true;
            while result.is_ok() {
                match s.next_key(first) {
                    Ok(Some(_)) => result = s.skip_value(),
                    Ok(None) => break,
                    Err(e) => result = Err(e),
                }
                first = false;
            }
            assert!(result.is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn integers_agree_with_parsing_the_text(text in "-?[0-9]{1,21}[.eE]?[0-9]?") {
            let mut sc = Scanner::new(&text);
            if let Some(v) = sc.integer() {
                prop_assert_eq!(Ok(v), text.parse::<i64>());
            } else {
                prop_assert!(text.parse::<i64>().is_err());
            }
        }

        #[test]
        fn quote_search_agrees_with_memchr(
            text in proptest::collection::vec(prop_oneof![Just(b'"'), Just(b'\\'), Just(b'a'), any::<u8>()], 0..100),
        ) {
            prop_assert_eq!(
                find_quote_or_backslash(&text),
                memchr::memchr2(b'"', b'\\', &text)
            );
        }

        #[test]
        fn strings_round_trip_through_serde(text in ".{0,40}") {
            let json = serde_json::to_string(&text).unwrap();
            match Scanner::new(&json).scalar().unwrap() {
                Some(Scalar::String(c)) => prop_assert_eq!(c.as_ref(), text.as_str()),
                other => prop_assert!(false, "{:?}", other),
            }
        }

        #[test]
        fn string_into_bytes_decodes_like_string(text in ".{0,60}", escape_all in any::<bool>()) {
            let json = if escape_all {
                let mut j = String::from("\"");
                for unit in text.encode_utf16() {
                    j.push_str(&format!("\\u{unit:04X}"));
                }
                j.push('"');
                j
            } else {
                serde_json::to_string(&text).unwrap()
            };
            let mut out = b"prefix".to_vec();
            let mut sc = Scanner::new(&json);
            sc.string_into_bytes(&mut out).unwrap();
            prop_assert!(sc.at_end());
            prop_assert_eq!(&out[6..], text.as_bytes());
        }

        #[test]
        fn fully_escaped_strings_decode(text in ".{0,20}") {
            // Every character as \uXXXX, non-BMP ones as surrogate pairs.
            let mut json = String::from("\"");
            for unit in text.encode_utf16() {
                json.push_str(&format!("\\u{unit:04x}"));
            }
            json.push('"');
            match Scanner::new(&json).scalar().unwrap() {
                Some(Scalar::String(c)) => prop_assert_eq!(c.as_ref(), text.as_str()),
                other => prop_assert!(false, "{:?}", other),
            }
        }
    }
}
