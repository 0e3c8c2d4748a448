//! A runc-compatible runtime wrapper: converts the bundles of containers
//! that have a user namespace on the host network, then execs the real
//! runtime with the same argv.

fn main() {
    let code = userns_hostnet::wrapper::main(std::env::args_os().collect());
    std::process::exit(code);
}
