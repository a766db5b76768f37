//! Unit tests of the directory beside a file.

use std::path::Path;

use super::dir_of;

#[test]
fn a_bare_file_name_lives_in_the_working_directory() {
    assert_eq!(dir_of(Path::new("session.v3.jsonl")), Path::new("."));
    assert_eq!(dir_of(Path::new("a/session.v3.jsonl")), Path::new("a"));
    assert_eq!(dir_of(Path::new("/r/a/b")), Path::new("/r/a"));
    assert_eq!(dir_of(Path::new("./b")), Path::new("."));
}
