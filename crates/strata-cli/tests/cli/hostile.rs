//! Damaged logs through every reading command: whatever the damage, each command ends with
//! exit 0, 1 or 2 and a message — never a panic, never a crash signal.
//!
//! The damage is seeded and deterministic (a small xorshift generator), drawn from what real
//! logs suffer: flipped bytes, a cut anywhere, duplicated / swapped / missing lines, numbers
//! respelled past JavaScript's safe range or as `-0`, and stray JSON punctuation or escapes.

use super::*;

/// xorshift64*: enough randomness for reproducible damage, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One damaged copy of `log` (the sample's bytes), chosen by `rng`.
fn damage(log: &[u8], rng: &mut Rng) -> Vec<u8> {
    let lines: Vec<&[u8]> = log.split(|byte| *byte == b'\n').collect();
    let join = |lines: Vec<&[u8]>| lines.join(&b'\n');
    match rng.below(7) {
        0 => {
            let mut bytes = log.to_vec();
            for _ in 0..=rng.below(5) {
                let at = rng.below(bytes.len());
                bytes[at] = rng.next() as u8;
            }
            bytes
        }
        1 => log[..rng.below(log.len())].to_vec(),
        2 => {
            let mut lines = lines;
            let at = 1 + rng.below(lines.len() - 2);
            lines.insert(at, lines[at]);
            join(lines)
        }
        3 => {
            let mut lines = lines;
            let (a, b) = (
                1 + rng.below(lines.len() - 2),
                1 + rng.below(lines.len() - 2),
            );
            lines.swap(a, b);
            join(lines)
        }
        4 => {
            let mut lines = lines;
            lines.remove(1 + rng.below(lines.len() - 2));
            join(lines)
        }
        5 => {
            let text = String::from_utf8_lossy(log).into_owned();
            let digits: Vec<usize> = text
                .char_indices()
                .filter(|(at, c)| {
                    c.is_ascii_digit() && !text[..*at].ends_with(|p: char| p.is_ascii_digit())
                })
                .map(|(at, _)| at)
                .collect();
            let start = digits[rng.below(digits.len())];
            let end = text[start..]
                .find(|c: char| !c.is_ascii_digit())
                .map_or(text.len(), |len| start + len);
            let spelling = ["-0", "1e400", "9007199254740993", "-1", "0.5", "1E2"][rng.below(6)];
            format!("{}{spelling}{}", &text[..start], &text[end..]).into_bytes()
        }
        _ => {
            let text = String::from_utf8_lossy(log).into_owned();
            let mut at = rng.below(text.len());
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let stray = [
                "{", "}", "[", "]", "\"", ",", ":", "null", "\\u0000", "\\ud800",
            ][rng.below(10)];
            format!("{}{stray}{}", &text[..at], &text[at..]).into_bytes()
        }
    }
}

#[test]
fn damaged_logs_never_panic_any_reading_command() {
    let sample = std::fs::read(sample()).expect("sample");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut rng = Rng(0x5EED_CAFE_F00D_0001);
    let mut outcomes = [0_usize; 3];
    for case in 0..100 {
        let log = dir.path().join(format!("case{case}.jsonl"));
        std::fs::write(&log, damage(&sample, &mut rng)).expect("write");
        let report = dir.path().join(format!("case{case}.html"));
        let fork = dir.path().join(format!("case{case}.fork.jsonl"));
        let commands: [Vec<std::ffi::OsString>; 8] = [
            vec!["validate".into(), log.clone().into()],
            vec!["inspect".into(), log.clone().into(), "--json".into()],
            vec!["surface".into(), log.clone().into()],
            vec![
                "messages".into(),
                log.clone().into(),
                "--format".into(),
                "openai".into(),
            ],
            vec![
                "messages".into(),
                log.clone().into(),
                "--at".into(),
                "40".into(),
            ],
            vec![
                "report".into(),
                log.clone().into(),
                "-o".into(),
                report.into(),
            ],
            vec!["repair".into(), log.clone().into(), "--dry-run".into()],
            vec![
                "fork".into(),
                log.clone().into(),
                "--at".into(),
                "20".into(),
                "-o".into(),
                fork.into(),
            ],
        ];
        for args in commands {
            let output = strata()
                .args(&args)
                .env("NO_COLOR", "1")
                .output()
                .expect("run");
            let stderr = String::from_utf8_lossy(&output.stderr);
            let code = output.status.code();
            assert!(
                matches!(code, Some(0..=2)) && !stderr.contains("panicked"),
                "case {case}: strata {args:?} ended with {code:?}: {stderr}"
            );
            if let Some(code @ 0..=2) = code {
                outcomes[code as usize] += 1;
            }
        }
    }
    // The damage must actually reach the rules: most cases are rejected, some survive.
    assert!(outcomes[1] > 0, "no damaged log was rejected: {outcomes:?}");
    assert!(outcomes[0] > 0, "no command succeeded: {outcomes:?}");
}

/// The sample with a hostile header: an id holding ESC (a colour sequence), NUL and a newline,
/// and a cwd holding an OSC window-title sequence ended by BEL.
fn hostile_header_log(dir: &std::path::Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(sample()).expect("sample");
    let (header, body) = text.split_once('\n').expect("header line");
    let mut header: Value = serde_json::from_str(header).expect("header");
    header["id"] = Value::from("evil\u{1b}[31mRED\u{0}nul\nline");
    header["cwd"] = Value::from("/tmp/\u{1b}]0;owned\u{7}x");
    let path = dir.join("hostile.jsonl");
    std::fs::write(&path, format!("{header}\n{body}")).expect("write");
    path
}

/// A control byte a terminal would act on: C0 but newline and tab, DEL, or a C1 control
/// (UTF-8 `C2 80`..`C2 9F`).
fn raw_control(bytes: &[u8]) -> Option<usize> {
    bytes.iter().enumerate().position(|(index, &byte)| {
        (byte < 0x20 && byte != b'\n' && byte != b'\t')
            || byte == 0x7f
            || (byte == 0xc2
                && bytes
                    .get(index + 1)
                    .is_some_and(|next| (0x80..0xa0).contains(next)))
    })
}

/// Issue 22: a session id (and cwd) holding ESC, NUL or a newline was printed raw by `import`,
/// `sessions`, `inspect` and the others, so a log could recolour or retitle the terminal and
/// fake output lines. Plain-text output now spells them out (`\u{1b}`, `\0`, `\n`).
#[test]
fn hostile_header_strings_reach_the_terminal_escaped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = hostile_header_log(dir.path());
    let db = dir.path().join("store.db");
    let store = format!("sqlite:{}", db.display());
    let zroot = format!("jsonl-zstd:{}", dir.path().join("zroot").display());
    let fork = dir.path().join("fork.jsonl");
    let raw_root = format!("jsonl:{}", dir.path().join("raw").display());
    let shown_id = "evil\\u{1b}[31mRED\\0nul\\nline";
    let commands: Vec<(Vec<std::ffi::OsString>, bool)> = vec![
        (
            vec![
                "import".into(),
                "--store".into(),
                store.clone().into(),
                log.clone().into(),
            ],
            true,
        ),
        (
            vec!["sessions".into(), "--store".into(), store.clone().into()],
            true,
        ),
        (vec!["inspect".into(), log.clone().into()], true),
        (vec!["validate".into(), log.clone().into()], false),
        (vec!["surface".into(), log.clone().into()], false),
        (vec!["messages".into(), log.clone().into()], false),
        (
            vec!["repair".into(), "--dry-run".into(), log.clone().into()],
            false,
        ),
        (
            vec!["convert".into(), log.clone().into(), zroot.clone().into()],
            true,
        ),
        (
            vec!["sessions".into(), "--store".into(), zroot.into()],
            true,
        ),
        (
            vec![
                "fork".into(),
                log.clone().into(),
                "--at".into(),
                "20".into(),
                "-o".into(),
                fork.into(),
            ],
            false,
        ),
        // A whole store to another (an id with NUL cannot be named on a command line).
        (
            vec!["convert".into(), store.clone().into(), raw_root.into()],
            true,
        ),
        // The id again: a refusal's message names it too.
        (
            vec![
                "import".into(),
                "--store".into(),
                store.into(),
                log.clone().into(),
            ],
            true,
        ),
    ];
    for (args, names_id) in commands {
        let output = strata()
            .args(&args)
            .env("NO_COLOR", "1")
            .output()
            .expect("run");
        assert!(
            matches!(output.status.code(), Some(0..=2)),
            "{args:?}: {:?}",
            output.status
        );
        for (stream, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
            if let Some(at) = raw_control(bytes) {
                panic!(
                    "{args:?}: raw control byte 0x{:02x} in {stream} at {at}: {}",
                    bytes[at],
                    String::from_utf8_lossy(bytes)
                );
            }
        }
        let text = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        if names_id {
            assert!(text.contains(shown_id), "{args:?}: {text}");
        }
    }
}
