//! Unit tests of the PostgreSQL backend's server-free parts: addresses, names, keys and the row
//! ↔ line mapping. Everything that talks to a server is in the integration tests.

use super::row::event_line;
use super::*;

#[test]
fn addresses_keep_driver_parameters_and_take_the_schema() {
    let config = PostgresConfig::from_url(
        "postgres://alice:s3cret@db.example:6543/agents?schema=team_a&connect_timeout=3",
    )
    .unwrap();
    assert_eq!(config.schema_name(), "team_a");
    assert_eq!(
        config.describe(),
        "postgres://alice@db.example:6543/agents?schema=team_a"
    );
    assert_eq!(
        config.pg.get_connect_timeout(),
        Some(&Duration::from_secs(3))
    );
    let default = PostgresConfig::from_url("postgresql://bob@localhost/test").unwrap();
    assert_eq!(default.schema_name(), DEFAULT_SCHEMA);
    assert!(default
        .pg
        .get_application_name()
        .is_some_and(|name| parse_pid(name) == Some(std::process::id())));
}

#[test]
fn bad_addresses_are_refused_without_echoing_the_password() {
    for (url, expected) in [
        ("mysql://u:pw@h/db", "must start with postgres://"),
        ("postgres://u:pw@h/db#id", "has no #fragment"),
        (
            "postgres://u:pw@h/db?schema=no-dash",
            "schema name \"no-dash\"",
        ),
        ("postgres://u:pw@h/db?schema=", "schema name \"\""),
        ("postgres://u:pw@h/db?bogus=1", "unknown"),
    ] {
        let error = PostgresConfig::from_url(url).unwrap_err().to_string();
        assert!(error.contains(expected), "{url}: {error}");
        assert!(!error.contains("pw"), "{url} leaks its password: {error}");
    }
    assert_eq!(
        redact("postgres://user:pa:ss@host:5432/db?x=1"),
        "postgres://user@host:5432/db?x=1"
    );
    assert_eq!(redact("postgres://host/db"), "postgres://host/db");
}

// Issue 22: a search_path given in the address's libpq options was ignored for `strata`.
#[test]
fn a_search_path_in_the_options_names_the_schema() {
    let base = "postgres://u:pw@h/db";
    for (query, schema) in [
        ("options=-csearch_path=team_b", "team_b"),
        ("options=--search_path%3Dteam_b", "team_b"),
        ("options=--search-path%3Dteam_b", "team_b"),
        ("options=-c%20SEARCH_PATH%3DTeam_B,public", "team_b"),
        ("options=-c%20search_path%3D%22Team_B%22,public", "Team_B"),
        // A backslash keeps a space in its word.
        (
            "options=-c%20search_path%3D%22Team_B%22,%5C%20public",
            "Team_B",
        ),
        ("options=-csearch_path%3Da%20-c%20search_path%3Db", "b"),
        ("schema=team_b&options=-csearch_path%3Dteam_b", "team_b"),
        ("options=-c%20geqo%3Doff", DEFAULT_SCHEMA),
    ] {
        let config = PostgresConfig::from_url(&format!("{base}?{query}")).unwrap();
        assert_eq!(config.schema_name(), schema, "{query}");
        assert!(config.describe().ends_with(&format!("?schema={schema}")));
    }
    // The options still reach the server as given.
    let config = PostgresConfig::from_url(&format!(
        "{base}?options=-c%20geqo%3Doff%20-csearch_path%3Dx"
    ))
    .unwrap();
    assert_eq!(config.pg.get_options(), Some("-c geqo=off -csearch_path=x"));
}

#[test]
fn a_search_path_naming_no_usable_schema_is_refused_naming_the_option() {
    let base = "postgres://u:pw@h/db";
    for (query, expected) in [
        (
            "options=-csearch_path%3D%24user,public",
            "options sets search_path=$user,public, whose first schema \"$user\" names no fixed schema",
        ),
        (
            "options=-csearch_path%3D%22%24user%22",
            "names no fixed schema",
        ),
        ("options=-csearch_path%3D", "options sets search_path=, which names no schema"),
        ("options=-csearch_path%3Da,", "search_path=a,, which ends in a comma"),
        // Unescaped, the space ends the word: the server would read `search_path=a,` too.
        ("options=-csearch_path%3Da,%20b", "search_path=a,, which ends in a comma"),
        ("options=-csearch_path%3D%22a", "unterminated quoted name"),
        ("options=-csearch_path%3D%22%22", "empty schema name"),
        (
            "options=-csearch_path%3Dno-dash",
            "the search_path in options names schema \"no-dash\" first, which strata cannot use",
        ),
        (
            "schema=team_a&options=-csearch_path%3Dteam_b",
            "schema=team_a and the search_path in options (first schema \"team_b\") name different schemas",
        ),
    ] {
        let error = PostgresConfig::from_url(&format!("{base}?{query}"))
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{query}: {error}");
        assert!(!error.contains("pw"), "{query} leaks its password: {error}");
    }
}

#[test]
fn holder_pids_are_read_back_from_application_names() {
    assert_eq!(parse_pid("strata pid=42 host=a"), Some(42));
    assert_eq!(parse_pid("strata pid=7"), Some(7));
    assert_eq!(parse_pid("psql"), None);
    assert_eq!(parse_pid("strata host=a"), None);
    assert!(application_name().len() <= 63);
}

#[test]
fn keys_are_stable_across_hosts_and_separate_their_parts() {
    // FNV-1a 64 test vectors: the key must never change between builds or hosts.
    assert_eq!(fnv1a(&[""]), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a(&["a"]), 0xaf63_dc4c_8601_ec8c);
    assert_ne!(fnv1a(&["ab", "c"]), fnv1a(&["a", "bc"]));
}

#[test]
fn notifications_name_the_session_when_it_fits() {
    assert_eq!(notify_payload(12, "s1"), "12 s1");
    assert_eq!(notify_payload(12, &"x".repeat(8_000)), "12");
}

#[test]
fn rows_rebuild_the_v3_line_in_dsh_key_order() {
    let line = event_line(
        "tool/result",
        5,
        -1,
        "{\"b\":1,\"a\":-0}",
        Some("[[1,3]]"),
        Some("{\"op\":\"append\"}"),
        false,
    );
    assert_eq!(
        String::from_utf8(line).unwrap(),
        "{\"type\":\"tool/result\",\"seq\":5,\"time\":-1,\"data\":{\"b\":1,\"a\":-0},\
         \"sourceEventSeqs\":[[1,3]],\"surfaceOp\":{\"op\":\"append\"}}"
    );
    let line = event_line("x-\"odd\"/t", 0, 0, "null", None, None, true);
    assert_eq!(
        String::from_utf8(line).unwrap(),
        "{\"type\":\"x-\\\"odd\\\"/t\",\"seq\":0,\"time\":0,\"data\":null,\"ignorable\":true}"
    );
}
