//! Writes the seed corpus: `strata-fuzz-seeds <repo-root> <out-dir> [TARGET...]` puts each
//! target's seeds in `<out-dir>/<target>/` (every target when none is named).

use std::path::PathBuf;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let root = PathBuf::from(args.next().unwrap_or_else(|| ".".into()));
    let out = PathBuf::from(args.next().unwrap_or_else(|| "fuzz/corpus".into()));
    let named: Vec<String> = args.map(|arg| arg.to_string_lossy().into_owned()).collect();
    for (target, _) in strata_fuzz::TARGETS {
        if !named.is_empty() && !named.iter().any(|name| name == target) {
            continue;
        }
        let dir = out.join(target);
        std::fs::create_dir_all(&dir)?;
        let seeds = strata_fuzz::seeds::corpus(target, &root);
        let bytes: usize = seeds.iter().map(|(_, seed)| seed.len()).sum();
        for (name, seed) in &seeds {
            std::fs::write(dir.join(format!("seed-{name}")), seed)?;
        }
        println!("{target}: {} seeds, {bytes} bytes", seeds.len());
    }
    Ok(())
}
