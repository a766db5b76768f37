//! The schema a libpq `options` string selects with `search_path`: an address that says
//! `options=-csearch_path=NAME` keeps strata's tables in `NAME`, as it would any other
//! client's, instead of in the default schema.
//!
//! The server splits `options` at unescaped whitespace (a backslash escapes the next character)
//! and reads the words as its command-line switches: `-c NAME=VALUE`, `-cNAME=VALUE` and
//! `--NAME=VALUE` set a parameter (a dash in `NAME` reads as an underscore, names ignore case,
//! and the last setting wins). `search_path` is a comma-separated list of schema names: an
//! unquoted name folds to lower case, a double-quoted one is kept as written (`""` is a quote).
//! PostgreSQL creates an unqualified table in the first schema of the path, so that is the one
//! strata uses. A path whose first entry is `$user` names no fixed schema and is refused.

/// The first schema of the `search_path` that `options` sets; `Ok(None)` when it sets none.
/// `Err` carries a detail naming the option when the path names no usable first schema.
pub(super) fn search_path_schema(options: &str) -> Result<Option<String>, String> {
    let words = words(options);
    let mut words = words.iter();
    let mut path = None;
    while let Some(word) = words.next() {
        let setting = if let Some(long) = word.strip_prefix("--") {
            Some(long)
        } else if word == "-c" {
            words.next().map(String::as_str)
        } else {
            word.strip_prefix("-c")
        };
        let Some((name, value)) = setting.and_then(|setting| setting.split_once('=')) else {
            continue;
        };
        if name.replace('-', "_").eq_ignore_ascii_case("search_path") {
            path = Some(value);
        }
    }
    let Some(path) = path else {
        return Ok(None);
    };
    let refuse = |why: String| format!("options sets search_path={path}, {why}");
    let schemas = schema_list(path).map_err(refuse)?;
    match schemas.first() {
        None => Err(refuse(
            "which names no schema for strata's tables (name one, or use ?schema=NAME)".into(),
        )),
        Some(first) if first == "$user" => Err(refuse(
            "whose first schema \"$user\" names no fixed schema (name one first, or use \
             ?schema=NAME)"
                .into(),
        )),
        Some(first) => Ok(Some(first.clone())),
    }
}

/// `options` split into the words the server reads.
fn words(options: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        if c.is_ascii_whitespace() {
            words.extend(word.take());
            continue;
        }
        let c = if c == '\\' { chars.next() } else { Some(c) };
        let word = word.get_or_insert_with(String::new);
        word.extend(c);
    }
    words.extend(word);
    words
}

/// The schema names of a `search_path` value, as the server reads them.
fn schema_list(path: &str) -> Result<Vec<String>, String> {
    let mut schemas = Vec::new();
    let mut chars = path.chars().peekable();
    loop {
        while chars.next_if(char::is_ascii_whitespace).is_some() {}
        if chars.peek().is_none() {
            if schemas.is_empty() {
                return Ok(schemas);
            }
            return Err("which ends in a comma".into());
        }
        let mut name = String::new();
        if chars.next_if_eq(&'"').is_some() {
            loop {
                match chars.next() {
                    Some('"') if chars.next_if_eq(&'"').is_some() => name.push('"'),
                    Some('"') => break,
                    Some(c) => name.push(c),
                    None => return Err("which has an unterminated quoted name".into()),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| *c != ',' && !c.is_ascii_whitespace()) {
                name.push(c);
            }
            name.make_ascii_lowercase();
        }
        if name.is_empty() {
            return Err("which holds an empty schema name".into());
        }
        schemas.push(name);
        while chars.next_if(char::is_ascii_whitespace).is_some() {}
        match chars.next() {
            None => return Ok(schemas),
            Some(',') => {}
            Some(c) => return Err(format!("which has {c:?} where a comma should be")),
        }
    }
}
