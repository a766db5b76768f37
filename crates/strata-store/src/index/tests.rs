//! The offset index format: lookups, identity, torn and garbage entries.

use super::*;

fn identity() -> IndexIdentity {
    IndexIdentity {
        zstd: true,
        header_hash: 42,
        dev: 7,
        ino: 9,
    }
}

fn positions(n: u64) -> Vec<RecordPos> {
    (0..n)
        .map(|seq| RecordPos {
            frame: 1_000 + seq * 100,
            offset: u32::try_from(seq % 5).unwrap(),
        })
        .collect()
}

#[test]
fn offset_index_round_trips_and_rewrites_a_suffix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(INDEX_FILE_NAME);
    let mut index = OffsetIndex::open_or_create(&path, &identity()).unwrap();
    index.write_from(0, &positions(10)).unwrap();
    assert_eq!(index.n_entries(), 10);
    let index = OffsetIndex::open(&path, &identity()).unwrap().unwrap();
    for (seq, pos) in positions(10).into_iter().enumerate() {
        assert_eq!(index.get(seq as u64).unwrap(), Some(pos));
    }
    assert_eq!(index.get(10).unwrap(), None);
    // Rewriting from seq 4 drops everything after the new entries.
    let mut index = OffsetIndex::open_or_create(&path, &identity()).unwrap();
    index.write_from(4, &positions(2)).unwrap();
    assert_eq!(index.n_entries(), 6);
    assert_eq!(index.get(4).unwrap(), Some(positions(2)[0]));
    assert_eq!(index.get(6).unwrap(), None);
    // A gap is refused.
    assert!(index.write_from(8, &positions(1)).is_err());
}

#[test]
fn offset_index_of_another_log_or_version_is_recreated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(INDEX_FILE_NAME);
    let mut index = OffsetIndex::open_or_create(&path, &identity()).unwrap();
    index.write_from(0, &positions(3)).unwrap();
    for other in [
        IndexIdentity {
            ino: 10,
            ..identity()
        },
        IndexIdentity {
            header_hash: 43,
            ..identity()
        },
        IndexIdentity {
            zstd: false,
            ..identity()
        },
    ] {
        assert!(OffsetIndex::open(&path, &other).unwrap().is_none());
    }
    // Another version number in the header.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8] = 2;
    std::fs::write(&path, &bytes).unwrap();
    assert!(OffsetIndex::open(&path, &identity()).unwrap().is_none());
    let index = OffsetIndex::open_or_create(&path, &identity()).unwrap();
    assert_eq!(index.n_entries(), 0);
}

#[test]
fn torn_and_garbage_entries_are_misses() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(INDEX_FILE_NAME);
    let mut index = OffsetIndex::open_or_create(&path, &identity()).unwrap();
    index.write_from(0, &positions(6)).unwrap();
    let full = std::fs::read(&path).unwrap();
    // Torn at every byte: whole entries before the cut read back, the rest are misses.
    for len in 0..full.len() {
        std::fs::write(&path, &full[..len]).unwrap();
        match OffsetIndex::open(&path, &identity()).unwrap() {
            None => assert!(len < HEADER_LEN as usize),
            Some(index) => {
                let whole = (len as u64 - HEADER_LEN) / ENTRY_LEN;
                for seq in 0..6 {
                    let expected = (seq < whole).then(|| positions(6)[seq as usize]);
                    assert_eq!(index.get(seq).unwrap(), expected, "len {len} seq {seq}");
                }
            }
        }
    }
    // Zeroed and flipped entries fail their check.
    let mut damaged = full.clone();
    for byte in &mut damaged[HEADER_LEN as usize..(HEADER_LEN + ENTRY_LEN) as usize] {
        *byte = 0;
    }
    damaged[(HEADER_LEN + ENTRY_LEN + 3) as usize] ^= 1;
    std::fs::write(&path, &damaged).unwrap();
    let index = OffsetIndex::open(&path, &identity()).unwrap().unwrap();
    assert_eq!(index.get(0).unwrap(), None);
    assert_eq!(index.get(1).unwrap(), None);
    assert_eq!(index.get(2).unwrap(), Some(positions(6)[2]));
}
