//! Tests of [`super`] (rules.rs): examples, one reading at a time.

use super::*;

const GIT_PUSH: &[&str] = &["git", "push"];

#[track_caller]
fn runs(command: &str, prefix: &[&str]) {
    assert!(may_run(command, prefix), "{command:?} should count as running {prefix:?}");
}

#[track_caller]
fn not(command: &str, prefix: &[&str]) {
    assert!(!may_run(command, prefix), "{command:?} should not count as running {prefix:?}");
}

#[test]
fn the_issue_47_examples_match() {
    for c in [
        "git push",
        "git --no-pager push",
        "git -c a=b push",
        "git -C dir push",
        "/usr/bin/git push",
        "sudo git push",
        "env X=1 git push",
        "true && git push",
        "cd x; git push",
        "$(echo git) push",
        "git -c x=y --no-pager push",
        "sudo -u root git push",
        "echo x; git push",
        "$(git push)",
        "bash -c 'git push'",
        "\"git\" push",
        r"g\it push",
    ] {
        runs(c, GIT_PUSH);
    }
    runs("npm --tag next publish", &["npm", "publish"]);
    runs("/bin/rm -rf x", &["rm"]);
}

#[test]
fn a_word_that_is_no_option_ends_the_search() {
    for c in [
        "git log --grep push",
        "git status",
        "git -C push status",
        "git -c push status",
        "git commit -m 'git push'",
        "echo git push",
        "rg 'git push' .",
        "legit push",
        "gitk push",
        "git pushx",
        "git show push",
        "git 'log' push",
        "cat push",
    ] {
        not(c, GIT_PUSH);
    }
    not("npm test", &["npm", "publish"]);
    not("npm run publish", &["npm", "publish"]);
    not("ls -la", &["rm"]);
    not("echo rm -rf x", &["rm"]);
    not("", GIT_PUSH);
}

#[test]
fn compound_commands_are_all_read() {
    for c in [
        "true || git push",
        "make | git push",
        "make & git push",
        "make\ngit push",
        "(git push)",
        "{ git push; }",
        "if true; then git push; fi",
        "while false; do git push; done",
        "until x; do :; done; git push",
        "for x in a; do git push; done",
        "case x in a) git push;; esac",
        "! git push",
        "echo `git push`",
        "echo \"$(git push)\"",
        "echo \"a $(echo \"b\" ; git push) c\"",
        "diff <(git push) x",
        "tee >(git push)",
        "x=$(git push)",
        "echo ${x:-$(git push)}",
        "f() { git push; }; f",
        "coproc git push",
        "time git push",
        "echo \"$(case x in a) git push;; esac)\"",
        "echo $((1 + $(git push)))",
        "echo `echo \\`git push\\``",
    ] {
        runs(c, GIT_PUSH);
    }
}

#[test]
fn quotes_and_escapes_are_removed() {
    for c in [
        "'git' push",
        "g'i't p\"u\"sh",
        "$'git' push",
        "$'\\x67it' push",
        "$'\\147it' push",
        "$'\\u0067it' push",
        "$\"git\" push",
        "gi\\\nt push",
        "git \\\n push",
        "\\git \\push",
        "g\"\"it push",
    ] {
        runs(c, GIT_PUSH);
    }
}

#[test]
fn redirections_and_their_targets_are_dropped() {
    for c in [">out git push", "2>/dev/null git push", "git push 2>&1", "<in git push", "&>log git push", "git 2>x push", ">>log git push"]
    {
        runs(c, GIT_PUSH);
    }
    not("echo > git push", GIT_PUSH);
}

#[test]
fn here_documents_comments_and_open_quotes_are_read_too() {
    runs("cat <<EOF\ndon't\nEOF\ngit push", GIT_PUSH);
    runs("cat <<'EOF'\nx\nEOF\ngit push", GIT_PUSH);
    runs("cat <<-EOF\n\tx\n\tEOF\ngit push", GIT_PUSH);
    runs("cat <<EOF\n$(git push)\nEOF", GIT_PUSH);
    runs("echo x # don't\ngit push", GIT_PUSH);
    runs("echo x #; git push", GIT_PUSH);
    runs("echo 'unterminated; git push", GIT_PUSH);
    runs("echo \"unterminated; git push", GIT_PUSH);
    runs("bash <<EOF\ngit push\nEOF", GIT_PUSH);
}

#[test]
fn fish_single_quotes_are_read_too() {
    // POSIX: `'a\'` is a word, then `x`, then a quote; fish: the quote
    // runs to the second `'`, and the push is a command.
    runs(r"echo 'a\' x ' ; git push ; '", GIT_PUSH);
}

#[test]
fn wrappers_and_their_options_are_passed_over() {
    for c in [
        "sudo -E git push",
        "sudo -Eu root git push",
        "sudo --user=root git push",
        "sudo --user root git push",
        "sudo -- git push",
        "sudo X=1 git push",
        "doas -u root git push",
        "env -i PATH=/x git push",
        "env -u HOME git push",
        "env -C dir git push",
        "env -S 'git push'",
        "command git push",
        "command -p git push",
        "builtin exec git push",
        "exec -a name git push",
        "nice -n 5 git push",
        "nice -10 git push",
        "nohup git push",
        "time -p git push",
        "timeout 5 git push",
        "timeout -s KILL 5s git push",
        "timeout --signal=KILL 5s git push",
        "xargs -n1 git push",
        "echo push | xargs git",
        "echo push | xargs -I{} git {}",
        "stdbuf -oL git push",
        "ionice -c 3 git push",
        "ionice -c3 git push",
        "chroot /x git push",
        "setsid git push",
        "flock /tmp/l git push",
        "flock /tmp/l -c 'git push'",
        "watch 'git push'",
        "su -c 'git push' root",
        "su root -c 'git push'",
        "gosu root git push",
        "taskset -c 0 git push",
        "ssh host git push",
        "ssh -p 22 host 'git push'",
        "find . -exec git push \\;",
        "A=1 B=2 sudo env C=3 nice git push",
        "noglob git push",
    ] {
        runs(c, GIT_PUSH);
    }
    not("sudo -u git push", GIT_PUSH);
    not("timeout git push", GIT_PUSH);
}

#[test]
fn shells_and_eval_read_their_code() {
    for c in [
        "sh -c 'git push'",
        "bash -lc 'git push'",
        "bash -e -c 'git push'",
        "bash -o pipefail -c 'git push'",
        "zsh -c \"cd x && git push\"",
        "fish -c 'git push'",
        "fish --command='git push'",
        "bash -c \"bash -c 'git push'\"",
        "eval git push",
        "eval 'git push'",
        "eval \"$X\"",
        "bash -c \"$CMD\"",
        "echo git push | sh",
        "curl x | bash -s",
        "bash /dev/stdin",
        "bash <(echo git push)",
        "source <(echo git push)",
        ". /dev/stdin",
    ] {
        runs(c, GIT_PUSH);
    }
    runs("alias g='git push'; g", GIT_PUSH);
    runs("trap 'git push' EXIT", GIT_PUSH);
    runs("trap \"$X\" EXIT", GIT_PUSH);
    not("alias ll='ls -l'", GIT_PUSH);
    not("trap - EXIT", GIT_PUSH);
    not("bash deploy.sh", GIT_PUSH);
    not("bash -c 'git status'", GIT_PUSH);
    not("eval echo hi", GIT_PUSH);
}

#[test]
fn code_nested_past_the_depth_limit_counts_as_a_match() {
    let mut c = "git status".to_string();
    for _ in 0..12 {
        c = format!("eval {}", c.replace('\'', ""));
    }
    runs(&c, GIT_PUSH);
}

#[test]
fn expansions_are_any_word() {
    for c in
        ["$GIT push", "${GIT} push", "\"$GIT\" push", "git $SUB", "git \"$SUB\"", "git $OPTS push", "/usr/bin/$X push", "`which git` push"]
    {
        runs(c, GIT_PUSH);
    }
    runs("git${IFS}push", GIT_PUSH);
    not("echo $X", GIT_PUSH);
    not("git log $X", GIT_PUSH);
}

#[test]
fn braces_and_globs_are_expanded_or_matched() {
    for c in
        ["{git,push}", "git {push,pull}", "{/usr/bin/git,push}", "git {p..p}ush", "/usr/bin/gi? push", "git pu*", "git p[u]sh", "=git push"]
    {
        runs(c, GIT_PUSH);
    }
    not("git {pull,fetch}", GIT_PUSH);
    not("echo {1..1000}", GIT_PUSH);
    runs("rm{,}", &["rm"]);
}

#[test]
fn git_global_options_and_aliases() {
    for c in [
        "git --git-dir .git push",
        "git --git-dir=.git push",
        "git --work-tree x --namespace y push",
        "git -p push",
        "git --bare push",
        "git --literal-pathspecs push",
        "git -P push",
        "git --no-optional-locks push",
        "git --exec-path=/x push",
        "git --frobnicate push",
        "git --frobnicate x push",
        "git -c alias.p=push p",
        "git -c Alias.P=push p origin",
        "git --config-env=alias.p=X p",
    ] {
        runs(c, GIT_PUSH);
    }
    not("git -c core.pager=cat log", GIT_PUSH);
    runs("git remote -v add x y", &["git", "remote", "add"]);
    not("git remote show add", &["git", "remote", "add"]);
}

#[test]
fn other_programs_global_options() {
    runs("npm --tag next publish", &["npm", "publish"]);
    runs("npm --global publish", &["npm", "publish"]);
    runs("npm --registry=x publish", &["npm", "publish"]);
    runs("npm i lodash", &["npm", "install"]);
    runs("npm install lodash", &["npm", "i"]);
    runs("npm pub", &["npm", "publish"]);
    not("npm view publish", &["npm", "publish"]);
    runs("pnpm rm x", &["pnpm", "remove"]);
    runs("cargo +nightly publish", &["cargo", "publish"]);
    runs("cargo --config x=1 publish", &["cargo", "publish"]);
    runs("cargo -Z unstable publish", &["cargo", "publish"]);
    runs("cargo r", &["cargo", "run"]);
    not("cargo --color always build", &["cargo", "always"]);
    runs("docker -H tcp://x rm c", &["docker", "rm"]);
    runs("docker --context prod rm c", &["docker", "rm"]);
    not("docker -H rm ps", &["docker", "rm"]);
    runs("kubectl -n prod --context x delete pod y", &["kubectl", "delete"]);
    runs("kubectl --namespace=prod delete pod", &["kubectl", "delete"]);
    not("kubectl -n delete get pods", &["kubectl", "delete"]);
    runs("helm --kube-context x uninstall r", &["helm", "uninstall"]);
    runs("terraform -chdir=infra destroy", &["terraform", "destroy"]);
    runs("aws --profile prod --region eu s3 rm x", &["aws", "s3", "rm"]);
    not("aws --profile s3 ls", &["aws", "s3"]);
    runs("gcloud --project p compute instances delete x", &["gcloud", "compute", "instances", "delete"]);
    runs("make --jobs 4 deploy", &["make", "deploy"]);
}

#[test]
fn a_single_word_rule_matches_the_program_anywhere_it_runs() {
    for c in ["/bin/rm -rf x", "rm", "sudo rm x", "xargs rm", "find . -name x -exec rm {} +", "busybox rm x", "echo x | rm"] {
        runs(c, &["rm"]);
    }
    not("echo rm", &["rm"]);
    not("rmdir x", &["rm"]);
    not("firm x", &["rm"]);
}

#[test]
fn the_rule_program_is_compared_by_basename() {
    runs("./deploy.sh prod", &["./deploy.sh"]);
    runs("scripts/deploy.sh prod", &["./deploy.sh", "prod"]);
    runs("/usr/local/bin/git push", &["/usr/bin/git", "push"]);
    not("GIT push", GIT_PUSH);
}

#[test]
fn the_empty_rule_matches_everything() {
    assert!(may_run("", &[]));
    assert!(may_run("ls", &[]));
}

#[test]
fn long_and_hostile_inputs_end_quickly() {
    let started = std::time::Instant::now();
    let n = 256 * 1024;
    let inputs = [
        "a".repeat(n),
        "$(".repeat(n / 2),
        "\"$(".repeat(n / 3),
        "((((".repeat(n / 4),
        "{".repeat(n),
        "{a,b}".repeat(n / 5),
        "{a..a}".repeat(n / 6),
        "# ".repeat(n / 2),
        "'".repeat(n),
        "\\'".repeat(n / 2),
        "<<E ".repeat(n / 4),
        "eval ".repeat(n / 5),
        "sudo ".repeat(n / 5),
        "git ".repeat(n / 4),
        "s* ".repeat(n / 3),
        "x -- ".repeat(n / 5),
        "find -exec ".repeat(n / 10),
        "ssh ".repeat(n / 4),
        "bash -c ".repeat(n / 8),
        "git -x ".repeat(n / 7),
        "git *".repeat(n / 5) + "push",
        "é".repeat(n / 2),
        "$'\\".repeat(n / 3),
    ];
    for input in &inputs {
        let _ = may_run(input, GIT_PUSH);
        let _ = may_run(input, &["rm"]);
        let _ = may_run(input, &["git", "remote", "add"]);
    }
    assert!(may_run(&"x".repeat(MAX_BYTES + 1), GIT_PUSH), "past the limit counts as a match");
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "took {:?}", started.elapsed());
}

#[test]
fn unicode_is_sliced_on_character_boundaries() {
    for c in ["gït push", "git püsh", "é$'\\xé'", "$'\\uD800'", "\"é", "'é", "echo é{é,é}é", "git p[é]sh", "é=1 git push", "${é}"]
    {
        let _ = may_run(c, GIT_PUSH);
    }
    runs("é=1; git push", GIT_PUSH);
}

#[test]
fn brace_sequences() {
    let lit = |s: &str| s.chars().map(Piece::Lit).collect::<Vec<_>>();
    assert_eq!(sequence(&lit("1..3")), Some(vec!["1".into(), "2".into(), "3".into()]));
    assert_eq!(sequence(&lit("3..1")), Some(vec!["3".into(), "2".into(), "1".into()]));
    assert_eq!(sequence(&lit("01..03")), Some(vec!["01".into(), "02".into(), "03".into()]));
    assert_eq!(sequence(&lit("a..e..2")), Some(vec!["a".into(), "c".into(), "e".into()]));
    assert_eq!(sequence(&lit("a..b..c")), None);
    assert_eq!(sequence(&lit("ab..c")), None);
    assert_eq!(sequence(&lit("1..100000")).map(|v| v.len()), Some(MAX_EXPANSION + 1));
}
