//! strata-migrate's integration tests: the migration edges against upstream's fixtures and
//! generated logs (`edges`), the legacy restore sinks (`legacy_sink`), and the files a
//! migration reads and publishes (`files`).

mod edges;

mod files;

mod legacy_sink;
