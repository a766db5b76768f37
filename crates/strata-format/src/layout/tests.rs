//! Session directory and file naming (persistence §2.1, §2.4; session-core §10.4), with hostile
//! ids and an injectivity property.

use proptest::prelude::*;

use super::*;

fn round_trip(id: &str) -> String {
    let encoded = encode_segment(id).unwrap();
    assert_eq!(decode_segment(&encoded).unwrap(), id, "segment {encoded}");
    encoded
}

// §2.1: safe characters are kept literally.
#[test]
fn safe_ids_are_kept() {
    assert_eq!(round_trip("abc-XYZ_09.json"), "abc-XYZ_09.json");
    assert_eq!(
        round_trip("0190e1c4-7b3a-7cc2-9d52-1f0e3a6b9c11"),
        "0190e1c4-7b3a-7cc2-9d52-1f0e3a6b9c11"
    );
    assert_eq!(round_trip("..."), "...");
    assert_eq!(round_trip(".hidden"), ".hidden");
}

// §2.1: path separators and traversal cannot escape the project directory.
#[test]
fn hostile_ids_stay_one_component() {
    assert_eq!(round_trip("../x"), "..~002Fx");
    assert_eq!(round_trip("a/b"), "a~002Fb");
    assert_eq!(round_trip("a\\b"), "a~005Cb");
    assert_eq!(round_trip("a\0b"), "a~0000b");
    assert_eq!(round_trip("C:x"), "C~003Ax");
    assert_eq!(round_trip(" "), "~0020");
}

// §2.1: whole `.` and `..` are escaped; elsewhere `.` is literal.
#[test]
fn dot_ids_are_escaped_whole() {
    assert_eq!(round_trip("."), "~002E");
    assert_eq!(round_trip(".."), "~002E~002E");
}

// §2.1: `~` itself is escaped, which is what makes the mapping injective.
#[test]
fn tilde_is_escaped() {
    assert_eq!(round_trip("~"), "~007E");
    assert_eq!(round_trip("~002F"), "~007E002F");
}

// §2.1: UTF-16 code units, not chars: a non-BMP character is two escapes.
#[test]
fn non_bmp_is_two_units() {
    assert_eq!(round_trip("😀"), "~D83D~DE00");
    assert_eq!(round_trip("é"), "~00E9");
    assert_eq!(round_trip("日本"), "~65E5~672C");
}

#[test]
fn long_ids_encode_without_limit() {
    let safe = "a".repeat(4096);
    assert_eq!(round_trip(&safe).len(), 4096);
    let unsafe_id = "/".repeat(4096);
    assert_eq!(round_trip(&unsafe_id).len(), 5 * 4096);
}

#[test]
fn empty_id_is_rejected() {
    assert_eq!(encode_segment(""), Err(LayoutError::EmptySessionId));
}

#[test]
fn decode_rejects_foreign_names() {
    assert_eq!(decode_segment(""), Err(LayoutError::EmptySegment));
    assert!(matches!(
        decode_segment("a b"),
        Err(LayoutError::UnsafeByte {
            offset: 1,
            byte: b' ',
            ..
        })
    ));
    assert!(matches!(
        decode_segment("é"),
        Err(LayoutError::UnsafeByte {
            offset: 0,
            byte: 0xC3,
            ..
        })
    ));
    assert!(matches!(
        decode_segment("x~12"),
        Err(LayoutError::BadEscape { offset: 1, .. })
    ));
    assert!(matches!(
        decode_segment("~00G0"),
        Err(LayoutError::BadEscape { offset: 0, .. })
    ));
    assert!(matches!(
        decode_segment("~D83D"),
        Err(LayoutError::LoneSurrogate { .. })
    ));
}

#[test]
fn decode_rejects_non_canonical_spellings() {
    for (segment, id) in [
        (".", "."),
        ("..", ".."),
        ("~0041", "A"),
        ("~002Ex", ".x"),
        ("~002e~002e", ".."),
        ("~00e9", "é"),
    ] {
        match decode_segment(segment) {
            Err(LayoutError::NonCanonical {
                segment: found,
                id: decoded,
                ..
            }) => {
                assert_eq!(found, segment);
                assert_eq!(decoded, id);
            }
            other => panic!("{segment}: expected NonCanonical, got {other:?}"),
        }
    }
}

// §2.1 projectKey examples.
#[test]
fn project_keys() {
    assert_eq!(project_key(None), "_no-cwd");
    assert_eq!(project_key(Some("/home/user/proj")), "--home-user-proj--");
    assert_eq!(project_key(Some("C:\\Users\\me\\x")), "--C-Users-me-x--");
    assert_eq!(project_key(Some("/a//b\\:/c/")), "--a-b-c---");
    assert_eq!(project_key(Some("/")), "--root--");
    assert_eq!(project_key(Some("")), "--root--");
    assert_eq!(project_key(Some("--")), "--root--");
    assert_eq!(project_key(Some("/-x")), "--x--");
    assert_eq!(project_key(Some("/a/-b")), "--a--b--");
    assert_eq!(project_key(Some("/tmp/my dir")), "--tmp-my~0020dir--");
    assert_eq!(project_key(Some("/~")), "--~007E--");
    assert_eq!(project_key(Some("/😀")), "--~D83D~DE00--");
}

// §2.1: lossy by design.
#[test]
fn project_keys_can_collide() {
    assert_eq!(project_key(Some("/a/b-c")), project_key(Some("/a-b/c")));
}

// §2.1: truncated to 251 units so the directory name fits in 255 bytes.
#[test]
fn project_key_is_truncated() {
    let long = format!("/{}", "x".repeat(1000));
    let key = project_key(Some(&long));
    assert_eq!(key.len(), 255);
    assert_eq!(key, format!("--{}--", "x".repeat(251)));
    // The cut may split an escape.
    let escaped = format!("/{}é", "x".repeat(249));
    assert_eq!(
        project_key(Some(&escaped)),
        format!("--{}~0--", "x".repeat(249))
    );
}

// §2.4: generation file names.
#[test]
fn session_file_names() {
    assert_eq!(session_file_name(0, false), "session.jsonl");
    assert_eq!(session_file_name(0, true), "session.jsonl.zstd");
    assert_eq!(session_file_name(1, false), "session.v1.jsonl");
    assert_eq!(session_file_name(3, true), "session.v3.jsonl.zstd");
    assert_eq!(session_file_name(12, false), "session.v12.jsonl");
}

#[test]
fn session_file_names_parse_back() {
    for generation in [0, 1, 2, 3, 10, u32::MAX] {
        for zstd in [false, true] {
            let name = session_file_name(generation, zstd);
            assert_eq!(parse_session_file_name(&name), Some((generation, zstd)));
        }
    }
    for foreign in [
        "session.v0.jsonl",
        "session.v01.jsonl",
        "session.v.jsonl",
        "session.v1jsonl",
        "session.v-1.jsonl",
        "session.v4294967296.jsonl",
        "session.jsonl.zst",
        "session.jsonl.abc123456789.tmp",
        "session.v3.jsonl.zstd.0123456789ab.tmp",
        "Session.jsonl",
        "lock",
        "",
    ] {
        assert_eq!(parse_session_file_name(foreign), None, "{foreign}");
    }
}

/// Strings drawn mostly from characters the encoding treats specially.
fn tricky_id() -> impl Strategy<Value = String> {
    let unit = prop_oneof![
        Just('.'),
        Just('~'),
        Just('/'),
        Just('\\'),
        Just('\0'),
        Just('-'),
        Just('a'),
        Just('😀'),
        Just('é'),
        any::<char>(),
    ];
    prop::collection::vec(unit, 1..12).prop_map(|chars| chars.into_iter().collect())
}

strata_testkit::proptest! {
    #[test]
    fn decode_inverts_encode(id in tricky_id()) {
        let encoded = encode_segment(&id).unwrap();
        prop_assert_eq!(decode_segment(&encoded).unwrap(), id);
    }

    #[test]
    fn decode_inverts_encode_for_any_string(id in any::<String>().prop_filter("non-empty", |s| !s.is_empty())) {
        let encoded = encode_segment(&id).unwrap();
        prop_assert_eq!(decode_segment(&encoded).unwrap(), id);
    }

    #[test]
    fn encoding_is_one_safe_component(id in tricky_id()) {
        let encoded = encode_segment(&id).unwrap();
        prop_assert!(!encoded.is_empty());
        prop_assert!(encoded != "." && encoded != "..");
        prop_assert!(encoded
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'~')));
    }

    #[test]
    fn distinct_ids_get_distinct_segments(a in tricky_id(), b in tricky_id()) {
        prop_assume!(a != b);
        prop_assert_ne!(encode_segment(&a).unwrap(), encode_segment(&b).unwrap());
    }

    #[test]
    fn decode_accepts_only_canonical(segment in "[A-Za-z0-9._~-]{1,12}") {
        if let Ok(id) = decode_segment(&segment) {
            prop_assert_eq!(encode_segment(&id).unwrap(), segment);
        }
    }

    #[test]
    fn project_keys_are_safe_components(cwd in tricky_id()) {
        let key = project_key(Some(&cwd));
        prop_assert!(key.starts_with("--") && key.ends_with("--"));
        prop_assert!(key.len() <= 255);
        prop_assert!(key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'~')));
    }
}
