//! The rewrite of config.json keeps what the old file carried besides its
//! bytes: mode, owner and every extended attribute, the POSIX ACL and
//! `user.*` ones included (the SELinux label is one more such attribute).

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use common::{Bundle, ContainerGuard, Runtime, Sandbox};

fn acl_tool(tool: &str, args: &[&str], path: &Path) -> String {
    let out = Command::new(tool)
        .args(args)
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("{tool} (Debian package acl): {e}"));
    assert!(out.status.success(), "{tool} {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn getfacl(path: &Path) -> String {
    acl_tool("getfacl", &["--omit-header", "--numeric"], path)
}

/// A converted container's config.json: a new file (another inode), with
/// the old one's ACL, `user.*` attributes, mode and owner.
fn a_converted_config_keeps_its_attributes(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let bundle = Bundle::userns_hostnet(&["/bin/true"]);
    let config = bundle.config_path();
    xattr::set(&config, "user.origin", b"kubelet").unwrap();
    xattr::set(&config, "user.binary", &[0, 1, 255]).unwrap();
    acl_tool("setfacl", &["-m", "u:1234:r--,g:2345:rw-"], &config);
    std::os::unix::fs::chown(&config, Some(0), Some(2345)).unwrap();
    let acl = getfacl(&config);
    assert!(acl.contains("user:1234:r--"), "{acl}");
    let before = std::fs::metadata(&config).unwrap();

    let id = common::unique_id("attrs");
    let _guard = ContainerGuard::new(&sandbox, &id);
    sandbox
        .wrapper()
        .run(&["create", "--bundle", bundle.dir().to_str().unwrap(), &id])
        .assert_success();
    common::assert_converted_spec(&bundle.spec());

    let after = std::fs::metadata(&config).unwrap();
    assert_ne!(after.ino(), before.ino(), "config.json was not rewritten");
    assert_eq!(after.mode(), before.mode());
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    assert_eq!(getfacl(&config), acl);
    assert_eq!(
        xattr::get(&config, "user.origin").unwrap().as_deref(),
        Some(&b"kubelet"[..])
    );
    assert_eq!(
        xattr::get(&config, "user.binary").unwrap().as_deref(),
        Some(&[0, 1, 255][..])
    );
    let mut names: Vec<String> = xattr::list(&config)
        .unwrap()
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["system.posix_acl_access", "user.binary", "user.origin"]
    );
}

common::for_runtimes!(a_converted_config_keeps_its_attributes);
