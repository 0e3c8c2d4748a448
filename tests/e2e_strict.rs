//! Obfuscated specs with the real runc and crun: a container with a user
//! namespace on the host network, its config.json written so that runc,
//! crun and a plain JSON reader could each read something else (a second
//! `linux` object, a case-folded `Linux`, a KELVIN SIGN in `hooks`, a NUL
//! in a key, trailing bytes, ...). Through the wrapper every form is
//! refused with one line naming the place, the bundle stays byte for byte,
//! and no container exists afterwards: none of them runs unhardened.

mod common;

use common::{Bundle, Runtime, Sandbox};
use std::ffi::OsString;

/// Host root for the whole range: what an obfuscated second copy of the
/// mappings asks for.
const HOST_ROOT: &str = r#"[{"containerID": 0, "hostID": 0, "size": 65536}]"#;

/// One form: its name, the edit of config.json's text, and the field the
/// refusal must name.
type Form = (&'static str, fn(String) -> Vec<u8>, &'static str);

fn forms() -> Vec<Form> {
    vec![
        (
            "trailing bytes",
            |t| format!("{t} {{}}").into_bytes(),
            "(top level)",
        ),
        (
            "invalid UTF-8",
            |t| {
                let mut b = t.replacen('{', "{\"hostname\": \"h\u{1}", 1).into_bytes();
                let at = b.iter().position(|&c| c == 1).unwrap();
                b.splice(at..=at, [0xff, b'"', b',']);
                b
            },
            "hostname",
        ),
        (
            "lone surrogate",
            |t| {
                t.replacen('{', "{\"hostname\": \"\\ud800\",", 1)
                    .into_bytes()
            },
            "hostname",
        ),
        (
            "200-level nesting in an unknown key",
            |t| {
                let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
                t.replacen('{', &format!("{{\"x-deep\": {deep},"), 1)
                    .into_bytes()
            },
            "x-deep",
        ),
        (
            "a comment",
            |t| t.replacen('{', "{ /* c */", 1).into_bytes(),
            "(top level)",
        ),
        (
            "a second linux object",
            |t| {
                let end = t.rfind('}').unwrap();
                format!(
                    "{}, \"linux\": {{\"uidMappings\": {HOST_ROOT}, \"gidMappings\": {HOST_ROOT}}}}}",
                    t[..end].trim_end()
                )
                .into_bytes()
            },
            "linux",
        ),
        (
            "Linux beside linux",
            |t| {
                t.replacen(
                    '{',
                    &format!("{{\"Linux\": {{\"uidMappings\": {HOST_ROOT}}},"),
                    1,
                )
                .into_bytes()
            },
            "Linux",
        ),
        (
            "UIDMappings beside uidMappings",
            |t| {
                t.replacen(
                    "\"linux\": {",
                    &format!("\"linux\": {{\"UIDMappings\": {HOST_ROOT},"),
                    1,
                )
                .into_bytes()
            },
            "linux.UIDMappings",
        ),
        (
            "Path in a namespace entry",
            |t| {
                t.replacen(
                    "\"type\": \"user\"",
                    "\"type\": \"user\", \"Path\": \"/proc/1/ns/user\"",
                    1,
                )
                .into_bytes()
            },
            "linux.namespaces",
        ),
        (
            "duplicate type in a namespace entry",
            |t| {
                t.replacen(
                    "\"type\": \"user\"",
                    "\"type\": \"user\", \"type\": \"pid\"",
                    1,
                )
                .into_bytes()
            },
            "linux.namespaces",
        ),
        (
            "KELVIN SIGN in hooks",
            |t| {
                t.replacen(
                    '{',
                    "{\"hoo\u{212A}s\": {\"createRuntime\": [{\"path\": \"/bin/true\"}]},",
                    1,
                )
                .into_bytes()
            },
            "[\"hoo\u{212A}s\"]",
        ),
        (
            "NUL in a key",
            |t| {
                t.replacen(
                    '{',
                    &format!("{{\"linux\\u0000\": {{\"uidMappings\": {HOST_ROOT}}},"),
                    1,
                )
                .into_bytes()
            },
            "[\"linux\\0\"]",
        ),
    ]
}

fn obfuscated_forms_are_refused(runtime: Runtime) {
    let sandbox = Sandbox::new(runtime);
    let mut failures = Vec::new();
    for (name, edit, field) in forms() {
        let bundle = Bundle::userns_hostnet(&["/bin/true"]);
        let text = String::from_utf8(std::fs::read(bundle.config_path()).unwrap()).unwrap();
        std::fs::write(bundle.config_path(), edit(text)).unwrap();
        let snap = bundle.snapshot();
        for verb in ["create", "run"] {
            let id = common::unique_id("strict");
            let _guard = common::ContainerGuard::new(&sandbox, &id);
            let argv: Vec<OsString> = vec![
                verb.into(),
                "--bundle".into(),
                bundle.dir().into(),
                id.clone().into(),
            ];
            let out = sandbox.wrapper().run(&argv);
            let head = format!("userns-hostnet-runtime: refused: spec: {field}");
            let lines: Vec<&str> = out.stderr.lines().collect();
            if out.code() != Some(1)
                || !out.stdout.is_empty()
                || lines.len() != 1
                || !lines[0].starts_with(&head)
            {
                failures.push(format!(
                    "{name} ({verb}): want `{head}...`\n{}",
                    out.describe()
                ));
            }
            if sandbox.real().state(&id).is_some() {
                failures.push(format!("{name} ({verb}): a container exists"));
            }
            snap.assert_unchanged(&bundle.config_path(), name);
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Each refusal is in the decision log too.
    let refused = sandbox
        .decisions()
        .iter()
        .filter(|d| d["refused"]["rule"] == "spec")
        .count();
    assert_eq!(refused, 2 * forms().len());
}

common::for_runtimes!(obfuscated_forms_are_refused);
