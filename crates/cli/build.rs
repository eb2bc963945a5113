//! Puts the git commit and the build profile into `pmscope --version`, so a result can be
//! traced to the code that measured it.

use std::process::Command;

fn main() {
    let git = |args: &[&str]| -> Option<String> {
        let o = Command::new("git").args(args).output().ok()?;
        o.status
            .success()
            .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    println!(
        "cargo:rustc-env=PMSCOPE_GIT_COMMIT={commit}{}",
        if dirty { "-modified" } else { "" }
    );
    println!(
        "cargo:rustc-env=PMSCOPE_BUILD_PROFILE={}",
        std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into())
    );
    // Rebuild when HEAD moves: HEAD itself, and the branch it names, which is a loose file or
    // a line of packed-refs (a fresh clone's). `--git-path` finds both in a worktree too; a
    // path that does not exist would make cargo rebuild every time, so only existing ones
    // are watched.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&["rev-parse", "--git-path", &name])
            && std::path::Path::new(&path).exists()
        {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
