//! strata-migrate's integration tests: the migration edges against upstream's fixtures and
//! generated logs (`edges`), the legacy restore sinks (`legacy_sink`), the files a
//! migration reads and publishes (`files`), and opening any generation (`open`).

mod edges;

mod files;

mod legacy_sink;

mod open;
