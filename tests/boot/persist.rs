//! `persist` across real reboots (systemd-nspawn, ~1 s a boot): the shutdown
//! sync runs before systemd unmounts the tmpfs, the boot restore runs before
//! anything uses the directory, the timer syncs on its own, and journald's
//! files in a persisted /var/log survive every boot whole.

use crate::guest;

/// Reboots in the shutdown-sync loop: a file written 1 s before each must be
/// back after it.
const REBOOTS: u32 = 20;

#[test]
fn a_file_written_a_second_before_reboot_is_back_after_every_boot() {
    crate::require_guest!(false);
    let _one = guest::one_at_a_time();
    let script = format!(
        r#"{tree}
D=/srv/data
if [ $n = 1 ]; then
  mkdir -p $D/sub; echo base > $D/base; echo deep > $D/sub/deep
  tmpfsctl persist enable $D --interval 1h --yes > $O/enable.txt 2>&1 || say "enable $D failed"
  # The timer, on its own: a second directory synced every 2 s.
  mkdir -p /srv/timed; echo one > /srv/timed/f
  tmpfsctl persist enable /srv/timed --interval 2s --yes >> $O/enable.txt 2>&1 || say "enable /srv/timed failed"
  tmpfsctl persist status /srv/timed --json > $O/timed-0.json
  echo two > /srv/timed/f
  sleep 7
  tmpfsctl persist status /srv/timed --json > $O/timed-1.json
  # An upgrade (here: the same package again) restarts no persist unit.
  systemctl show -P InvocationID tmpfsctl-persist-srv-data.service > $O/invocation-before
  dpkg -i $P/tmpfsctl.deb > $O/upgrade.log 2>&1 || say "upgrade failed"
  systemctl show -P InvocationID tmpfsctl-persist-srv-data.service > $O/invocation-after
  # Removal refuses while directories are persisted, and names them.
  dpkg -r tmpfsctl > $O/remove.log 2>&1; echo $? > $O/remove.rc
  man -P cat tmpfsctl > $O/man.txt 2>&1
fi
if [ $n -ge 2 ] && [ $n -le {last} ]; then
  got=$(cat $D/last 2>/dev/null); want=$(cat $P/want)
  if [ "$got" = "$want" ]; then echo "$n kept" >> $O/reboots; else echo "$n lost (found: '$got')" >> $O/reboots; fi
fi
if [ $n -le {reboots} ]; then
  v="written at boot $n, $(date +%s.%N)"
  echo "$v" > $P/want; sync -f $P/want
  echo "$v" > $D/last
  sleep 1
  reboot_now
fi
if [ $n = {last} ]; then
  echo final > $D/final
  tree $D > $O/tree-before-disable
  tmpfsctl persist disable $D --yes > $O/disable.txt 2>&1 || say "disable failed"
  reboot_now
fi
findmnt -no FSTYPE $D > $O/fstype-after-disable
tree $D > $O/tree-after-disable
power_off
"#,
        tree = crate::TREE,
        reboots = REBOOTS,
        last = REBOOTS + 1,
    );
    let run = guest::nspawn("persist", &script, REBOOTS + 3);
    let ctx = run.context();
    let reboots = run.read("reboots");
    let kept = reboots.lines().filter(|l| l.ends_with(" kept")).count();
    eprintln!("persist shutdown sync: {kept} of {REBOOTS} reboots kept the file\n{reboots}");
    assert_eq!(
        kept, REBOOTS as usize,
        "files written 1 s before reboot were lost:\n{reboots}\n{ctx}"
    );
    // The timer synced /srv/timed on its own within 7 s of a change.
    let json = |name: &str| -> serde_json::Value {
        serde_json::from_str(&run.read(name)).unwrap_or_default()
    };
    let generation = |v: &serde_json::Value| v["dirs"][0]["generation"].as_u64().unwrap_or(0);
    let (t0, t1) = (json("timed-0.json"), json("timed-1.json"));
    assert!(
        generation(&t1) > generation(&t0) && generation(&t0) > 0,
        "the 2 s timer did not sync: generation {} then {}\n{ctx}",
        generation(&t0),
        generation(&t1)
    );
    let inv = (run.read("invocation-before"), run.read("invocation-after"));
    assert!(!inv.0.trim().is_empty(), "no persist unit running\n{ctx}");
    assert_eq!(
        inv.0, inv.1,
        "upgrading the package restarted the persist unit"
    );
    assert_ne!(
        run.read("remove.rc").trim(),
        "0",
        "dpkg -r succeeded while dirs are persisted"
    );
    let removal = run.read("remove.log");
    assert!(
        removal.contains("/srv/data") && removal.contains("/srv/timed"),
        "removal did not name the persisted dirs:\n{removal}"
    );
    assert!(
        run.read("man.txt").contains("tmpfsctl"),
        "`man tmpfsctl` failed in the guest:\n{}",
        run.read("man.txt")
    );
    // After disable and a reboot DIR is on disk with the final tree.
    assert_eq!(
        run.read("fstype-after-disable").trim(),
        "",
        "still a mount after disable\n{ctx}"
    );
    let (before, after) = (
        run.read("tree-before-disable"),
        run.read("tree-after-disable"),
    );
    assert!(before.contains("./final"), "no final tree recorded\n{ctx}");
    assert_eq!(
        before, after,
        "DIR on disk after disable differs from the final tree\n{ctx}"
    );
}

const LATE_WRITER: &str = "[Unit]
Description=writes to /srv/logs while the system shuts down
After=tmpfsctl-persist-srv-logs.service
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
ExecStop=/bin/sh -c 'sleep 0.5; echo \"last line of boot $(cat /probe/boots)\" >> /srv/logs/late.log'
[Install]
WantedBy=multi-user.target
";

const EARLY_WRITER: &str = "[Unit]
Description=writes to /srv/logs early at boot
DefaultDependencies=no
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo \"early at boot $(cat /probe/boots)\" >> /srv/logs/early.log'
[Install]
WantedBy=sysinit.target
";

#[test]
fn shutdown_writers_early_writers_and_journald_keep_every_line_and_boot() {
    crate::require_guest!(false);
    let _one = guest::one_at_a_time();
    let script = format!(
        r#"L=/srv/logs
if [ $n = 1 ]; then
  mkdir -p $L /var/log/journal
  printf '%s' '{late}' > /etc/systemd/system/late-writer.service
  printf '%s' '{early}' > /etc/systemd/system/early-writer.service
  tmpfsctl persist enable $L --interval 1h --before early-writer.service --yes > $O/enable.txt 2>&1 \
    || tmpfsctl persist enable $L --interval 1h --yes >> $O/enable.txt 2>&1 || say "enable $L failed"
  tmpfsctl persist enable /var/log --interval 1h --yes >> $O/enable.txt 2>&1 || {{ say "enable /var/log failed"; journalctl -u tmpfsctl-persist-var-log.service --no-pager | tail -n 30 >> $O/enable.txt 2>&1; }}
  # journald opened its files before /var/log was a tmpfs: reopen them there.
  journalctl --relinquish-var; journalctl --flush
  systemctl daemon-reload
  systemctl enable late-writer.service early-writer.service 2>> $O/enable.txt
  systemctl start late-writer.service
fi
if [ $n -ge 2 ]; then
  want="last line of boot $((n - 1))"
  got=$(tail -n1 $L/late.log 2>/dev/null)
  if [ "$got" = "$want" ]; then echo "$n kept" >> $O/late; else echo "$n lost (found: '$got')" >> $O/late; fi
fi
if [ $n -le 5 ]; then reboot_now; fi
cat $L/early.log > $O/early.log
findmnt -no FSTYPE $L > $O/fstype-logs; findmnt -no FSTYPE /var/log >> $O/fstype-logs
journalctl --list-boots --no-pager > $O/list-boots 2>&1
journalctl --verify > $O/verify.txt 2>&1; echo $? > $O/verify.rc
power_off
"#,
        late = LATE_WRITER.replace('\'', "'\\''"),
        early = EARLY_WRITER.replace('\'', "'\\''"),
    );
    let run = guest::nspawn("shutdown", &script, 8);
    let ctx = run.context();
    assert_eq!(
        run.read("fstype-logs"),
        "tmpfs\ntmpfs\n",
        "/srv/logs and /var/log are not persisted tmpfs:\n{}\n{ctx}",
        run.read("enable.txt")
    );
    let late = run.read("late");
    let kept = late.lines().filter(|l| l.ends_with(" kept")).count();
    let boots = run.read("list-boots");
    eprintln!("shutdown writer: {kept} of 5 reboots kept its last line\n{late}");
    eprintln!("journalctl --list-boots after 5 reboots:\n{boots}");
    eprintln!("journalctl --verify: {}", run.read("verify.txt"));
    eprintln!("early writer in the tmpfs:\n{}", run.read("early.log"));
    assert_eq!(
        kept, 5,
        "a shutdown writer's last line was lost:\n{late}\n{ctx}"
    );
    // The early writer wrote into the tmpfs at each boot after the first...
    let early = run.read("early.log");
    assert_eq!(
        early.lines().count(),
        5,
        "early writer's lines in the tmpfs:\n{early}\n{ctx}"
    );
    // ...and never into the directory on disk below the mount.
    let below = run.root.join("srv/logs/early.log");
    assert!(
        !below.exists(),
        "the early writer wrote below the mount, into the disk directory:\n{}",
        std::fs::read_to_string(&below).unwrap_or_default()
    );
    let listed = boots
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .any(|w| w.len() == 32 && w.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .count();
    assert_eq!(listed, 6, "journal lost boots:\n{boots}\n{ctx}");
    assert_eq!(
        run.read("verify.rc").trim(),
        "0",
        "journalctl --verify failed:\n{}",
        run.read("verify.txt")
    );
}

/// `persist enable /var/log` on a running system, journald writing there:
/// enable hands journald over itself (`--relinquish-var` before the copy,
/// `--flush` once the tmpfs is mounted), so what it logs after the enable
/// is in the tmpfs, synced at shutdown and back after the reboot. Without
/// the hand-over journald kept writing to the file hidden under the tmpfs,
/// and the line was gone.
#[test]
fn journald_on_var_log_keeps_a_line_logged_after_enable_across_reboot() {
    crate::require_guest!(false);
    let _one = guest::one_at_a_time();
    let script = r#"M=gaps-marker-after-enable
if [ $n = 1 ]; then
  mkdir -p /var/log/journal
  journalctl --flush
  i=0; until ls /var/log/journal/*/system.journal > /dev/null 2>&1 || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
  ls -l /proc/$(pidof systemd-journald)/fd > $O/journald-fds-before 2>&1
  tmpfsctl persist enable /var/log --interval 1h --yes > $O/enable.txt 2>&1; echo $? > $O/enable.rc
  findmnt -no FSTYPE /var/log > $O/fstype
  echo "$M" | systemd-cat -t gaps
  journalctl --sync
  reboot_now
fi
journalctl -b -1 -g "$M" -o cat --no-pager > $O/marker-g.txt 2>&1; echo $? > $O/marker-g.rc
journalctl -b -1 -o cat --no-pager 2>&1 | grep -c "$M" > $O/marker.count
power_off
"#;
    let run = guest::nspawn("journald-enable", script, 3);
    let ctx = run.context();
    assert_eq!(
        run.read("enable.rc").trim(),
        "0",
        "enable /var/log failed:\n{}\n{ctx}",
        run.read("enable.txt")
    );
    assert_eq!(run.read("fstype").trim(), "tmpfs", "{ctx}");
    assert_eq!(
        run.read("marker.count").trim(),
        "1",
        "the line journald logged after enable is not in the previous boot's journal \
         (journalctl -g: {}):\nenable: {}\njournald's files before: {}\n{ctx}",
        run.read("marker-g.txt"),
        run.read("enable.txt"),
        run.read("journald-fds-before")
    );
}
