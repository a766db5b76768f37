//! The power-loss model (issue 26; docs/format.md §5, §6): a scenario runs the real JSONL store
//! (raw and zstd) while the journal records its file operations; every prefix of the journal is
//! then a moment a power cut may strike, and every image the kernel may leave at that moment is
//! rebuilt and opened.
//!
//! What the kernel may leave (the model's file system, stricter than ext4):
//! - a file's bytes and length are durable once it is synced (`fsync` or `fdatasync`); of the
//!   writes and truncations since, any subset may have reached the disk (so they reorder within
//!   a sync epoch), each write whole or torn at any byte — one torn write per image;
//! - a directory entry (a created file, a link, an unlink, a new directory) is durable once its
//!   directory is synced; of the entries since, any subset;
//! - a file whose name is not durable, or under a directory that is not, is gone;
//! - the sidecars (offset index, checkpoint) are never synced, so any subset of their writes,
//!   and of the checkpoint's renames, may be there.
//!
//! Images are built in place, each file keeping its inode (the sidecars name the log's), so an
//! open resumes from a checkpoint wherever the image holds a usable one; each scenario reports
//! how many did.
//!
//! Invariants checked on every image:
//! - when a log was acknowledged (create returned), it opens; every event acknowledged before
//!   the cut (an append returned, or an open for writing reported it durable) is present, byte
//!   for byte, both as the stored line (the raw file's line, the line of a complete zstd frame)
//!   and as the loaded event's line;
//! - the events after them are a prefix of what the store ever wrote (complete or cleanly cut,
//!   never a changed or foreign event);
//! - an open for writing recovers it (torn tail cut, open turn repaired) to a log that loads,
//!   and a second open adds nothing;
//! - and, as a check of the model itself, replaying the whole journal rebuilds the store's
//!   files byte for byte (a write the journal missed fails here).
//!
//! Kills are modelled on the journal: a process killed between an append's write and its sync
//! leaves the write in the page cache, so the test runs the append and then deletes its sync
//! from the journal (and, for a kill mid-write, cuts both the write and the file). The store
//! goes on from the file the kill left, as a real reopen would.
//!
//! `STRATA_POWERLOSS_STATES` caps the images explored per crash point (default 64) and sets
//! how densely a long write is torn (at half that many evenly spread bytes, besides its ends
//! and line ends; every byte once that covers it); `scripts/powerloss.sh` runs a larger
//! exploration and reports the counts.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use strata_core::{Candidate, HeaderSpec, SessionHeader};

use super::journal::{self, Op};
use crate::synth::turn_candidates;
use crate::{Compression, JsonlBackend, JsonlConfig, SessionWriter, Store};
use strata_format::codec::encode_event_line;

const ID: &str = "powerloss";
const CWD: &str = "/home/user/project";

fn states_per_point() -> usize {
    std::env::var("STRATA_POWERLOSS_STATES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(64)
}

/// xorshift64*: deterministic, so a failing image reproduces.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1) as u64) as usize
    }
}

// ---------------------------------------------------------------------------------------------
// The model file system.

#[derive(Clone, Debug)]
enum Data {
    Write { offset: u64, bytes: Vec<u8> },
    SetLen(u64),
}

impl Data {
    fn apply(&self, content: &mut Vec<u8>, torn_at: Option<usize>) {
        match self {
            Data::Write { offset, bytes } => {
                let bytes = &bytes[..torn_at.unwrap_or(bytes.len()).min(bytes.len())];
                let start = *offset as usize;
                if content.len() < start + bytes.len() {
                    content.resize(start + bytes.len(), 0);
                }
                content[start..start + bytes.len()].copy_from_slice(bytes);
            }
            Data::SetLen(len) => content.resize(*len as usize, 0),
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Inode {
    /// Whether it is a log (torn densely; other files, sidecars and temporary files, are torn
    /// once, in the middle of a write).
    is_log: bool,
    durable: Vec<u8>,
    current: Vec<u8>,
    /// Data operations since the last sync, in order.
    pending: Vec<Data>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    File(usize),
    Dir,
}

#[derive(Clone, Debug)]
enum DirOp {
    Put(PathBuf, Entry),
    Remove(PathBuf),
    /// `rename(2)`: the entry moves, replacing what `to` named, in one step.
    Rename {
        from: PathBuf,
        to: PathBuf,
    },
}

impl DirOp {
    fn apply(&self, names: &mut BTreeMap<PathBuf, Entry>) {
        match self {
            DirOp::Put(path, entry) => {
                names.insert(path.clone(), *entry);
            }
            DirOp::Remove(path) => {
                names.remove(path);
            }
            DirOp::Rename { from, to } => {
                if let Some(entry) = names.remove(from) {
                    names.insert(to.clone(), entry);
                }
            }
        }
    }
}

/// The file system as the journal left it at one moment: what the page cache shows
/// (`current`), what is durable, and what is in between.
#[derive(Clone, Debug, Default)]
struct Model {
    inodes: Vec<Inode>,
    current: BTreeMap<PathBuf, Entry>,
    durable: BTreeMap<PathBuf, Entry>,
    /// Directory entries since each directory's last sync, in order.
    pending_dirs: BTreeMap<PathBuf, Vec<DirOp>>,
    /// The event lines acknowledged so far.
    acked: Vec<Vec<u8>>,
    /// The directories the journal made (any other, like the recording root, is durable).
    made: BTreeSet<PathBuf>,
}

/// Whether `path` names a log (not a temporary file or a sidecar).
fn is_log_name(path: &Path) -> bool {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    name.ends_with(".jsonl") || name.ends_with(".jsonl.zstd")
}

fn parent(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

impl Model {
    fn file(&mut self, path: &Path) -> &mut Inode {
        match self.current.get(path) {
            Some(Entry::File(ino)) => &mut self.inodes[*ino],
            other => panic!(
                "journal names {} as a file, model has {other:?}",
                path.display()
            ),
        }
    }

    fn put(&mut self, path: &Path, entry: Entry) {
        self.current.insert(path.to_path_buf(), entry);
        self.pending_dirs
            .entry(parent(path))
            .or_default()
            .push(DirOp::Put(path.to_path_buf(), entry));
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Create(path) => {
                if !self.current.contains_key(path) {
                    self.inodes.push(Inode {
                        is_log: is_log_name(path),
                        ..Inode::default()
                    });
                    self.put(path, Entry::File(self.inodes.len() - 1));
                }
            }
            Op::Write {
                path,
                offset,
                bytes,
            } => {
                let data = Data::Write {
                    offset: *offset,
                    bytes: bytes.clone(),
                };
                let inode = self.file(path);
                data.apply(&mut inode.current, None);
                inode.pending.push(data);
            }
            Op::SetLen { path, len } => {
                let inode = self.file(path);
                Data::SetLen(*len).apply(&mut inode.current, None);
                inode.pending.push(Data::SetLen(*len));
            }
            Op::Sync(path) => {
                let inode = self.file(path);
                inode.durable = inode.current.clone();
                inode.pending.clear();
            }
            Op::Link { from, to } => {
                // A link onto a taken name fails (no-overwrite publish).
                if let (false, Some(&entry)) =
                    (self.current.contains_key(to), self.current.get(from))
                {
                    // A log is published under a temporary name first: it is a log from here.
                    if let Entry::File(ino) = entry {
                        self.inodes[ino].is_log |= is_log_name(to);
                    }
                    self.put(to, entry);
                }
            }
            Op::Unlink(path) => {
                if self.current.remove(path).is_some() {
                    self.pending_dirs
                        .entry(parent(path))
                        .or_default()
                        .push(DirOp::Remove(path.clone()));
                }
            }
            Op::Rename { from, to } => {
                let rename = DirOp::Rename {
                    from: from.clone(),
                    to: to.clone(),
                };
                rename.apply(&mut self.current);
                self.pending_dirs
                    .entry(parent(to))
                    .or_default()
                    .push(rename);
            }
            Op::Mkdir(path) => {
                self.made.insert(path.clone());
                self.put(path, Entry::Dir);
            }
            Op::SyncDir(dir) => {
                for op in self.pending_dirs.remove(dir).unwrap_or_default() {
                    op.apply(&mut self.durable);
                }
            }
            Op::Ack(lines) => self.acked = lines.clone(),
        }
    }
}

/// An image: file contents by path (directories implied by the paths).
type Image = BTreeMap<PathBuf, Vec<u8>>;

/// The image the page cache shows (every operation applied).
fn current_image(model: &Model) -> Image {
    image_of(model, &model.current, |ino| {
        model.inodes[ino].current.clone()
    })
}

/// The files of `names` reachable through directories `names` holds.
fn image_of(
    model: &Model,
    names: &BTreeMap<PathBuf, Entry>,
    content: impl Fn(usize) -> Vec<u8>,
) -> Image {
    let mut image = Image::new();
    for (path, entry) in names {
        let Entry::File(ino) = entry else { continue };
        let reachable = path
            .ancestors()
            .skip(1)
            .all(|dir| !model.made.contains(dir) || names.get(dir) == Some(&Entry::Dir));
        if reachable {
            image.insert(path.clone(), content(*ino));
        }
    }
    image
}

/// Where a write may be torn: every byte of a short write; of a longer one, its first and last
/// bytes, around every line end, and `spread` evenly spread points (only its middle when
/// `spread` is 0).
fn tear_points(bytes: &[u8], spread: usize) -> Vec<usize> {
    let n = bytes.len();
    if spread == 0 {
        return vec![n / 2];
    }
    if n <= 64.max(spread) {
        return (0..n).collect();
    }
    let mut points: BTreeSet<usize> = (0..8).chain(n - 8..n).collect();
    for (index, _) in bytes.iter().enumerate().filter(|(_, &byte)| byte == b'\n') {
        points.extend(
            [index, index + 1, index + 2]
                .into_iter()
                .filter(|&at| at < n),
        );
    }
    points.extend((0..n).step_by((n / spread.max(1)).max(1)));
    points.into_iter().collect()
}

/// The contents an inode's pending operations may leave: any subset applied in order (all of
/// them when there are at most 5), at most one write of it torn.
fn data_options(inode: &Inode) -> Vec<Vec<u8>> {
    let n = inode.pending.len();
    let subsets: Vec<u32> = if n <= 5 {
        (0..1u32 << n).collect()
    } else {
        // Prefixes, and everything but one.
        (0..=n)
            .map(|k| (1u32 << k) - 1)
            .chain((0..n).map(|skip| ((1u32 << n) - 1) & !(1 << skip)))
            .collect()
    };
    let mut options: Vec<Vec<u8>> = Vec::new();
    let mut seen = HashSet::new();
    let mut push = |content: Vec<u8>| {
        if seen.insert(content.clone()) {
            options.push(content);
        }
    };
    for subset in subsets {
        let chosen: Vec<&Data> = (0..n)
            .filter(|index| subset & (1 << index) != 0)
            .map(|index| &inode.pending[index])
            .collect();
        let apply = |torn: Option<(usize, usize)>| {
            let mut content = inode.durable.clone();
            for (index, data) in chosen.iter().enumerate() {
                let torn_at = torn.filter(|(at, _)| *at == index).map(|(_, cut)| cut);
                data.apply(&mut content, torn_at);
            }
            content
        };
        push(apply(None));
        for (index, data) in chosen.iter().enumerate() {
            if let Data::Write { bytes, .. } = data {
                let spread = if inode.is_log {
                    states_per_point() / 2
                } else {
                    0
                };
                for cut in tear_points(bytes, spread) {
                    push(apply(Some((index, cut))));
                }
            }
        }
    }
    options
}

/// The subsets of a directory's pending entries (all of them up to 5, else prefixes).
fn dir_options(ops: &[DirOp]) -> Vec<Vec<DirOp>> {
    let n = ops.len();
    if n <= 5 {
        (0..1u32 << n)
            .map(|subset| {
                (0..n)
                    .filter(|index| subset & (1 << index) != 0)
                    .map(|index| ops[index].clone())
                    .collect()
            })
            .collect()
    } else {
        (0..=n).map(|k| ops[..k].to_vec()).collect()
    }
}

/// Up to `cap` images a power cut at this moment may leave: every combination when there are
/// few, else the all-or-nothing corners, each choice alone, and random combinations.
fn crash_images(model: &Model, cap: usize, rng: &mut Rng) -> Vec<Image> {
    let files: Vec<(usize, Vec<Vec<u8>>)> = model
        .inodes
        .iter()
        .enumerate()
        .filter(|(_, inode)| !inode.pending.is_empty())
        .map(|(ino, inode)| (ino, data_options(inode)))
        .collect();
    let dirs: Vec<Vec<Vec<DirOp>>> = model
        .pending_dirs
        .values()
        .map(|ops| dir_options(ops))
        .collect();
    let radices: Vec<usize> = files
        .iter()
        .map(|(_, options)| options.len())
        .chain(dirs.iter().map(Vec::len))
        .collect();
    let build = |choice: &[usize]| -> Image {
        let mut names = model.durable.clone();
        for (dir_idx, options) in dirs.iter().enumerate() {
            for op in &options[choice[files.len() + dir_idx]] {
                op.apply(&mut names);
            }
        }
        image_of(model, &names, |ino| {
            match files.iter().position(|(file, _)| *file == ino) {
                Some(file_idx) => files[file_idx].1[choice[file_idx]].clone(),
                None => model.inodes[ino].durable.clone(),
            }
        })
    };
    let total: usize = radices
        .iter()
        .try_fold(1usize, |product, &radix| product.checked_mul(radix))
        .unwrap_or(usize::MAX);
    let mut choices: Vec<Vec<usize>> = Vec::new();
    if total <= cap {
        for mut index in 0..total {
            choices.push(
                radices
                    .iter()
                    .map(|&radix| {
                        let digit = index % radix;
                        index /= radix;
                        digit
                    })
                    .collect(),
            );
        }
    } else {
        let none = vec![0; radices.len()];
        let all: Vec<usize> = radices.iter().map(|&radix| radix - 1).collect();
        for (var, &radix) in radices.iter().enumerate() {
            for value in 0..radix {
                for base in [&none, &all] {
                    let mut choice = base.clone();
                    choice[var] = value;
                    choices.push(choice);
                }
            }
        }
        choices.truncate(cap.saturating_sub(cap / 4).max(2));
        choices.extend([none, all]);
        while choices.len() < cap {
            choices.push(radices.iter().map(|&radix| rng.below(radix)).collect());
        }
    }
    choices.iter().map(|choice| build(choice)).collect()
}

// ---------------------------------------------------------------------------------------------
// Checking an image.

/// What a scenario explored.
#[derive(Debug, Default)]
struct Explored {
    n_points: usize,
    n_images: usize,
    /// Images whose checkpoint a resumable open could use.
    n_resumable: usize,
}

/// The event lines of a log file as stored (`\n` included, header left out): a raw log's
/// terminated lines; a zstd log's lines in complete frames.
fn stored_lines(bytes: &[u8], compression: Compression) -> Result<Vec<Vec<u8>>, String> {
    let plain = match compression {
        Compression::None => bytes.to_vec(),
        Compression::Zstd => {
            let scan =
                strata_format::frames::scan_frames(bytes).map_err(|error| error.to_string())?;
            let mut plain = Vec::new();
            for frame in &scan.frames {
                let decoded = ::zstd::stream::decode_all(&bytes[frame.start..frame.end])
                    .map_err(|error| format!("frame at {}: {error}", frame.start))?;
                plain.extend(decoded);
            }
            plain
        }
    };
    Ok(plain
        .split_inclusive(|&byte| byte == b'\n')
        .filter(|line| line.ends_with(b"\n"))
        .skip(1)
        .map(<[u8]>::to_vec)
        .collect())
}

/// The stored events as loaded (what a load adds in memory, like a seed marker, left out).
fn loaded_lines(store: &Store) -> Result<Vec<Vec<u8>>, String> {
    let n_stored = store
        .read(ID)
        .map_err(|error| format!("read: {error}"))?
        .events
        .len();
    let session = store.load(ID).map_err(|error| format!("load: {error}"))?;
    Ok(session.events().unwrap()[..n_stored.min(session.len())]
        .iter()
        .map(|event| {
            let mut line = Vec::new();
            encode_event_line(event, &mut line);
            line
        })
        .collect())
}

fn is_prefix(lines: &[Vec<u8>], of: &[Vec<u8>]) -> bool {
    lines.len() <= of.len() && lines == &of[..lines.len()]
}

/// Opens one image and checks the invariants of the module doc; `Ok(true)` when a resumable
/// open could start from its checkpoint.
fn check_image(
    scenario: &Scenario,
    image: &Image,
    acked: &[Vec<u8>],
    header_acked: bool,
    everything: &[Vec<u8>],
) -> Result<bool, String> {
    materialize(&scenario.dir, image).map_err(|error| format!("materialize: {error}"))?;
    let store = scenario.store();
    let log = scenario.log_path();
    if !log.exists() {
        return if header_acked {
            Err("the acknowledged log is gone".into())
        } else {
            Ok(false)
        };
    }
    let bytes = std::fs::read(&log).map_err(|e| e.to_string())?;
    let lines = stored_lines(&bytes, scenario.compression)?;
    let loaded = loaded_lines(&store)?;
    for (what, lines) in [("stored", &lines), ("loaded", &loaded)] {
        if lines.len() < acked.len() || lines[..acked.len()] != *acked {
            let lost = (0..acked.len())
                .find(|&seq| lines.get(seq) != Some(&acked[seq]))
                .unwrap_or(0);
            return Err(format!(
                "{what} lines: {} of {} acknowledged events kept; seq {lost} lost or changed",
                lines.len().min(acked.len()),
                acked.len()
            ));
        }
    }
    if !is_prefix(&loaded, everything) {
        return Err(format!(
            "the log holds an event the store never wrote ({} events, {} ever written; first {:?} vs {:?})",
            loaded.len(),
            everything.len(),
            loaded.first().map(|l| String::from_utf8_lossy(l).into_owned()),
            everything.first().map(|l| String::from_utf8_lossy(l).into_owned()),
        ));
    }
    let resumable = store
        .backend()
        .scan(ID, crate::backend::ReadFrom::Checkpoint)
        .map_err(|error| format!("resumable scan: {error}"))?
        .resume_point()
        .is_some();
    let writer = store
        .open_write(ID)
        .map_err(|error| format!("open for writing: {error}"))?;
    writer.close().map_err(|error| format!("close: {error}"))?;
    let repaired = loaded_lines(&store)?;
    if !is_prefix(&loaded, &repaired) {
        return Err("recovery changed an event it had read".into());
    }
    let again = store
        .open_write(ID)
        .map_err(|error| format!("second open: {error}"))?;
    if !again.added_on_open().is_empty() {
        return Err("a second open added events".into());
    }
    again.close().map_err(|error| format!("close: {error}"))?;
    Ok(resumable)
}

/// Makes the files under `dir` the image (the lock file aside), writing each file in place: a
/// file keeps its inode (one an image lacks waits in `dir/.stash` for the next image that
/// has it), so the sidecars' evidence of the log's identity (device and inode) still holds
/// and an open may resume from them, as it would on the machine that lost power.
fn materialize(dir: &Path, image: &Image) -> std::io::Result<()> {
    let stash = dir.join(STASH);
    std::fs::create_dir_all(&stash)?;
    let stashed = |path: &Path| stash.join(path.to_string_lossy().replace('/', "%"));
    for path in real_files(dir).into_keys() {
        if !image.contains_key(&path) {
            std::fs::rename(&path, stashed(&path))?;
        }
    }
    for (path, content) in image {
        std::fs::create_dir_all(parent(path))?;
        if !path.exists() && stashed(path).exists() {
            std::fs::rename(stashed(path), path)?;
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        std::os::unix::fs::FileExt::write_all_at(&file, content, 0)?;
        file.set_len(content.len() as u64)?;
    }
    Ok(())
}

/// Scenarios run in memory when the machine has a tmpfs there (their fsyncs are free).
fn scratch_root() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// Replays the scenario's journal: at every moment, every image a power cut may leave is
/// opened and checked. Panics with the first violation.
fn explore(scenario: Scenario, ops: Vec<Op>) -> Explored {
    let everything = {
        let store = Scenario::store_at(&scenario.dir.join("store"), scenario.compression);
        loaded_lines(&store).unwrap_or_default()
    };
    // The model of the model: the whole journal rebuilds the store's files.
    let mut model = Model::default();
    for op in &ops {
        model.apply(op);
    }
    let rebuilt = current_image(&model);
    let real = real_files(&scenario.dir);
    assert_eq!(
        rebuilt.keys().collect::<Vec<_>>(),
        real.keys().collect::<Vec<_>>(),
        "the journal's files are not the store's"
    );
    for (path, content) in &real {
        assert!(
            rebuilt[path] == *content,
            "replaying the journal does not rebuild {}",
            path.display()
        );
    }
    let cap = states_per_point();
    let mut rng = Rng(0x5EED_F00D_D15C);
    let mut model = Model::default();
    let mut explored = Explored::default();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut header_acked = false;
    for (op_idx, op) in ops.iter().enumerate() {
        model.apply(op);
        if let Op::Ack(_) = op {
            header_acked = true;
        }
        explored.n_points += 1;
        for image in crash_images(&model, cap, &mut rng) {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            (&image, &model.acked).hash(&mut hasher);
            if !seen.insert(hasher.finish()) {
                continue;
            }
            explored.n_images += 1;
            match check_image(&scenario, &image, &model.acked, header_acked, &everything) {
                Ok(resumable) => explored.n_resumable += usize::from(resumable),
                Err(problem) => panic!(
                    "{}: a power cut after journal op {op_idx} ({}) leaves an image that breaks \
                     the log: {problem}\nimage: {}",
                    scenario.name,
                    describe(op),
                    describe_image(&image, &scenario.dir)
                ),
            }
        }
    }
    explored
}

fn describe(op: &Op) -> String {
    match op {
        Op::Write {
            path,
            offset,
            bytes,
        } => format!(
            "write {} bytes at {offset} to {}",
            bytes.len(),
            path.display()
        ),
        Op::Ack(lines) => format!("ack of {} events", lines.len()),
        other => format!("{other:?}"),
    }
}

fn describe_image(image: &Image, dir: &Path) -> String {
    image
        .iter()
        .map(|(path, content)| {
            format!(
                "{} ({} bytes)",
                path.strip_prefix(dir).unwrap_or(path).display(),
                content.len()
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where [`materialize`] keeps the files an image lacks.
const STASH: &str = ".stash";

/// The store's files under `dir`, except the lock file (not modelled: it holds no data).
fn real_files(dir: &Path) -> Image {
    let mut files = Image::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if entry.file_name() != STASH {
                    stack.push(path);
                }
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            if name != crate::lock::LOCK_FILE_NAME {
                files.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
            }
        }
    }
    files
}

// ---------------------------------------------------------------------------------------------
// Scenarios.

/// A store under a recorded directory.
struct Scenario {
    name: String,
    dir: PathBuf,
    _guard: tempfile::TempDir,
    compression: Compression,
}

impl Scenario {
    fn new(name: &str, compression: Compression) -> Scenario {
        let guard = tempfile::tempdir_in(scratch_root()).expect("a temporary directory");
        let dir = guard.path().to_path_buf();
        journal::start(&dir);
        Scenario {
            name: format!("{name} ({compression:?})"),
            dir,
            _guard: guard,
            compression,
        }
    }

    fn store_at(root: &Path, compression: Compression) -> Store {
        Store::new(JsonlBackend::new(JsonlConfig::new(root, compression)))
    }

    fn store(&self) -> Store {
        Scenario::store_at(&self.dir.join("store"), self.compression)
    }

    fn log_path_under(&self, dir: &Path) -> PathBuf {
        let backend = JsonlBackend::new(JsonlConfig::new(dir.join("store"), self.compression));
        let name =
            strata_format::layout::session_file_name(3, self.compression == Compression::Zstd);
        backend
            .session_dir(Some(CWD), ID)
            .expect("a session directory")
            .join(name)
    }

    fn log_path(&self) -> PathBuf {
        self.log_path_under(&self.dir)
    }

    fn create(&self) -> SessionWriter {
        let writer = self.store().create(header()).expect("create");
        self.ack(&writer);
        writer
    }

    fn reopen(&self) -> SessionWriter {
        let writer = self.store().open_write(ID).expect("reopen");
        self.ack(&writer);
        writer
    }

    /// Marks every event the writer holds durable as acknowledged.
    fn ack(&self, writer: &SessionWriter) {
        let n_durable = writer.durable_len() as usize;
        let lines = writer.with_session(|session| {
            session.events().unwrap()[..n_durable]
                .iter()
                .map(|event| {
                    let mut line = Vec::new();
                    encode_event_line(event, &mut line);
                    line
                })
                .collect()
        });
        journal::ack(&self.dir, lines);
    }

    fn append(&self, writer: &SessionWriter, batch: Vec<Candidate>) {
        writer.append(batch, 1_000).expect("append");
        self.ack(writer);
    }

    /// Runs an append as a process killed before its sync would: the write stays in the page
    /// cache (cut to `keep` of its bytes, when given) and nothing is acknowledged. The writer
    /// is gone, and so are the sidecars it kept (a killed writer leaves an older checkpoint, or
    /// none; the model has none).
    fn killed_append(&self, writer: SessionWriter, batch: Vec<Candidate>, keep: Option<f64>) {
        writer.append(batch, 1_000).expect("append");
        drop(writer);
        let log = self.log_path();
        crate::resume::remove_sidecars(&log).expect("remove sidecars");
        let cut = journal::edit(&self.dir, |ops| {
            let write = ops
                .iter()
                .rposition(|op| matches!(op, Op::Write { path, .. } if *path == log))
                .expect("the append's write");
            let sync = write
                + 1
                + ops[write + 1..]
                    .iter()
                    .position(|op| *op == Op::Sync(log.clone()))
                    .expect("the append's sync");
            ops.remove(sync);
            let (keep, Op::Write { offset, bytes, .. }) = (keep?, &mut ops[write]) else {
                return None;
            };
            bytes.truncate((bytes.len() as f64 * keep) as usize);
            Some(*offset + bytes.len() as u64)
        });
        if let Some(cut) = cut {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&log)
                .and_then(|file| file.set_len(cut))
                .expect("cut the log");
        }
    }

    fn finish(self) -> Explored {
        let ops = journal::finish(&self.dir);
        let name = self.name.clone();
        let explored = explore(self, ops);
        eprintln!(
            "power-loss model: {name}: {} crash points, {} distinct images opened \
             ({} resumable from their checkpoint)",
            explored.n_points, explored.n_images, explored.n_resumable
        );
        assert!(
            explored.n_images > explored.n_points / 2,
            "{name}: too few images"
        );
        explored
    }
}

fn header() -> SessionHeader {
    SessionHeader::new(HeaderSpec {
        id: ID.to_owned(),
        created_at: 1,
        cwd: Some(CWD.to_owned()),
        ..HeaderSpec::default()
    })
    .expect("a header")
}

/// The candidates of the next turn (its first `n` when given, leaving it open).
fn turn(writer: &SessionWriter, n: Option<usize>) -> Vec<Candidate> {
    turn_of(writer, n, 60)
}

/// [`turn`] with texts of about `text_len` bytes.
fn turn_of(writer: &SessionWriter, n: Option<usize>, text_len: usize) -> Vec<Candidate> {
    let (turn, next) = writer.with_session(|session| {
        let turns = session
            .latest(&strata_core::EventType::TurnStart)
            .and_then(|event| event.u64_field("turn"))
            .unwrap_or(0);
        (turns + 1, session.len() as u64)
    });
    let candidates = turn_candidates(turn, next, text_len);
    match n {
        Some(n) => candidates.into_iter().take(n).collect(),
        None => candidates,
    }
}

/// Whole and partial turns, a reopen that closes the open one, more appends.
fn appends(compression: Compression) -> Explored {
    let scenario = Scenario::new("appends", compression);
    let writer = scenario.create();
    for n in [None, None, Some(3)] {
        let batch = turn(&writer, n);
        scenario.append(&writer, batch);
    }
    writer.close().expect("close");
    let writer = scenario.reopen();
    let batch = turn(&writer, None);
    scenario.append(&writer, batch);
    writer.close().expect("close");
    scenario.finish()
}

/// Kills between write and sync, whole and mid-write, each followed by a reopen (which cuts a
/// torn tail, re-appends a torn zstd frame's records, and repairs the open turn) and appends.
fn kills(compression: Compression) -> Explored {
    let scenario = Scenario::new("killed appends", compression);
    let writer = scenario.create();
    let batch = turn(&writer, None);
    scenario.append(&writer, batch);
    let batch = turn(&writer, None);
    scenario.killed_append(writer, batch, None);
    let writer = scenario.reopen();
    let batch = turn(&writer, Some(4));
    scenario.killed_append(writer, batch, Some(0.7));
    let writer = scenario.reopen();
    let batch = turn(&writer, None);
    scenario.append(&writer, batch);
    writer.close().expect("close");
    scenario.finish()
}

/// A create killed after making the session's directory, before syncing its parent, then a
/// create that succeeds and appends.
fn create_after_a_killed_create(compression: Compression) -> Explored {
    let scenario = Scenario::new("create after a killed create", compression);
    let session_dir = scenario
        .log_path()
        .parent()
        .expect("a session directory")
        .to_path_buf();
    // What the killed create made durable (root and project directory), then the directory
    // it made and was killed before syncing in its parent.
    let mut made = Vec::new();
    for dir in session_dir.ancestors() {
        if dir == scenario.dir {
            break;
        }
        made.push(dir.to_path_buf());
    }
    for dir in made.iter().rev() {
        std::fs::create_dir(dir).expect("mkdir");
        journal::record(Op::Mkdir(dir.clone()));
        if *dir != session_dir {
            journal::record(Op::SyncDir(parent(dir)));
        }
    }
    let writer = scenario.create();
    let batch = turn(&writer, None);
    scenario.append(&writer, batch);
    writer.close().expect("close");
    scenario.finish()
}

/// A create killed after linking the log into place, before syncing its directory: the next
/// writer opens the log it finds and appends.
fn open_after_a_killed_create(compression: Compression) -> Explored {
    let scenario = Scenario::new("open after a killed create", compression);
    let writer = scenario.store().create(header()).expect("create");
    drop(writer);
    let dir = parent(&scenario.log_path());
    journal::edit(&scenario.dir, |ops| {
        let link = ops
            .iter()
            .rposition(|op| matches!(op, Op::Link { .. }))
            .expect("the create's link");
        let sync = link
            + ops[link..]
                .iter()
                .position(|op| *op == Op::SyncDir(dir.clone()))
                .expect("the create's directory sync");
        ops.remove(sync);
    });
    let writer = scenario.reopen();
    let batch = turn(&writer, None);
    scenario.append(&writer, batch);
    writer.close().expect("close");
    scenario.finish()
}

/// A zstd append of several blocks killed mid-write: the reopen cuts the torn frame and
/// re-appends the records of its complete blocks as a fresh frame (two synced steps).
fn torn_frame_recovery() -> Explored {
    let scenario = Scenario::new("torn frame recovery", Compression::Zstd);
    let writer = scenario.create();
    let batch = turn(&writer, None);
    scenario.append(&writer, batch);
    // Five user messages of 60 KB of incompressible text: a frame of several 128 KiB blocks.
    let mut rng = Rng(0xB10C_5EED);
    let batch = (0..5)
        .map(|index| {
            let text: String = (0..60_000)
                .map(|_| char::from(b'a' + rng.below(26) as u8))
                .collect();
            let message = strata_core::payload::UserMessage {
                message: strata_core::payload::user_text_message(&format!("m{index}"), &text),
            };
            Candidate::surface(message, strata_core::SurfaceIntent::append())
        })
        .collect();
    scenario.killed_append(writer, batch, Some(0.8));
    let torn = scenario.store().read(ID).expect("read").torn;
    assert!(
        torn.is_some_and(|torn| torn.n_recovered > 0),
        "the torn frame holds complete records: {torn:?}"
    );
    let writer = scenario.reopen();
    let batch = turn(&writer, None);
    scenario.append(&writer, batch);
    writer.close().expect("close");
    scenario.finish()
}

/// An import (a whole log published at once: temp file, fsync, link, directory fsync), then
/// a reopen and an append.
fn import(compression: Compression) -> Explored {
    let side = tempfile::tempdir().expect("a temporary directory");
    let source = Scenario::store_at(side.path(), compression);
    let writer = source.create(header()).expect("create");
    for _ in 0..3 {
        writer.append(turn(&writer, None), 1_000).expect("append");
    }
    writer.close().expect("close");
    let log = source.read(ID).expect("read");
    let scenario = Scenario::new("import", compression);
    scenario
        .store()
        .import(log.header, log.events)
        .expect("import");
    journal::ack(
        &scenario.dir,
        loaded_lines(&scenario.store()).expect("the imported log"),
    );
    let writer = scenario.reopen();
    let batch = turn(&writer, None);
    scenario.append(&writer, batch);
    writer.close().expect("close");
    scenario.finish()
}

#[test]
fn power_cuts_during_appends_keep_every_acknowledged_event() {
    for compression in [Compression::None, Compression::Zstd] {
        appends(compression);
    }
}

#[test]
fn power_cuts_after_killed_appends_keep_every_acknowledged_event() {
    for compression in [Compression::None, Compression::Zstd] {
        kills(compression);
    }
}

#[test]
fn power_cuts_after_a_create_that_follows_a_killed_create_keep_the_log() {
    for compression in [Compression::None, Compression::Zstd] {
        create_after_a_killed_create(compression);
    }
}

#[test]
fn power_cuts_after_an_open_that_follows_a_killed_create_keep_the_log() {
    for compression in [Compression::None, Compression::Zstd] {
        open_after_a_killed_create(compression);
    }
}

#[test]
fn power_cuts_around_a_torn_zstd_frame_recovery_keep_every_acknowledged_event() {
    torn_frame_recovery();
}

#[test]
fn power_cuts_during_an_import_and_after_it_keep_the_log() {
    for compression in [Compression::None, Compression::Zstd] {
        import(compression);
    }
}
