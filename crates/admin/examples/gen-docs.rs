//! `cargo run --example gen-docs -- DIR`: man pages into DIR/man and shell
//! completions into DIR/completions (`make man` uses `target`).

fn main() {
    let out = std::env::args_os()
        .nth(1)
        .map_or_else(|| std::path::PathBuf::from("target"), Into::into);
    match userns_hostnet_admin::docs::write_all(&out) {
        Ok(files) => {
            for f in files {
                println!("{}", f.display());
            }
        }
        Err(e) => {
            eprintln!("gen-docs: {}: {e}", out.display());
            std::process::exit(1);
        }
    }
}
