//! `persist` and a power cut (QEMU, `kill -9` with the disks on
//! cache=unsafe after the guest turned background writeback off): what the
//! timer synced comes back, what was written after it does not, a sync cut
//! off half way leaves nothing mixed, and `persist status` says when the
//! last sync was.

use crate::guest;

const SCRIPT: &str = r#"
D=/srv/pl
case $n in
1)
  mkdir -p $D/sub
  for i in 1 2 3; do echo "early $i" > $D/early-$i; done
  head -c 8388608 /dev/urandom > $D/sub/big
  # An interval no boot reaches: the syncs are the timer's unit, run here,
  # so the test knows which generation the power cut must bring back.
  tmpfsctl persist enable $D --interval 1h --yes > $O/enable.txt 2>&1 || say "enable failed"
  echo "changed before the timer" > $D/early-1
  systemctl start tmpfsctl-persist-sync-srv-pl.service || say "the timer's sync failed"
  tree $D > $O/tree-synced
  tmpfsctl persist status $D --json > $O/status-before.json
  # No global sync here: what the power cut brings back is what tmpfsctl
  # itself made durable (the store, the registry, the units).
  echo 0 > /proc/sys/vm/dirty_writeback_centisecs
  echo 360000 > /proc/sys/vm/dirty_expire_centisecs
  echo "changed before the timer" | md5sum | cut -d' ' -f1 > $O/md5-early-1
  echo late > $D/late-1; echo "changed after the sync" > $D/early-2; rm $D/early-3
  head -c 67108864 /dev/urandom > $D/sub/big
  tree $D > $O/tree-late
  sync -f $O/tree-late
  # A sync of 64 MiB is under way when the power goes (under TCG it takes
  # seconds): the timer's generation comes back, unless this one exited 0
  # first, and then its tree does; never a mix.
  (tmpfsctl persist sync $D > /dev/null 2>&1; echo $? > $O/cut-sync-rc; sync -f $O/cut-sync-rc) &
  sleep 0.3
  plug ;;
*)
  tree $D > $O/tree-after
  tmpfsctl persist status $D --json > $O/status-after.json 2>&1
  tmpfsctl persist status $D > $O/status-after.txt 2>&1
  power_off ;;
esac
"#;

#[test]
fn power_loss_brings_back_exactly_a_whole_synced_generation() {
    crate::require_guest!(true);
    let _one = guest::one_at_a_time();
    let run = guest::qemu("powerloss", &format!("{}\n{SCRIPT}", crate::TREE), 2);
    let ctx = run.context();
    assert_eq!(run.boots, 2, "the guest was not powered on again\n{ctx}");
    let (synced, late, after) = (
        run.read("tree-synced"),
        run.read("tree-late"),
        run.read("tree-after"),
    );
    let changed = run.read("md5-early-1");
    let changed = changed.trim();
    assert!(
        !changed.is_empty()
            && synced
                .lines()
                .any(|l| l.starts_with(changed) && l.ends_with("./early-1")),
        "the timer's sync did not see early-1 as changed ({changed}):\n{synced}\n{ctx}"
    );
    assert!(
        synced.lines().count() == 4 && late.lines().count() == 4 && synced != late,
        "trees before the cut:\n{synced}\n{late}\n{ctx}"
    );
    let json = |name: &str| -> serde_json::Value {
        serde_json::from_str(&run.read(name)).unwrap_or_default()
    };
    let last = |v: &serde_json::Value| v["dirs"][0]["last_sync_unix_s"].as_u64();
    let (before, now) = (json("status-before.json"), json("status-after.json"));
    let (Some(before), Some(now)) = (last(&before), last(&now)) else {
        panic!(
            "persist status gave no last sync: before {before}, after {now}\n{}\n{ctx}",
            run.read("status-after.txt")
        );
    };
    // The cut-off sync's exit status, if it got to write one before the cut.
    // None when the power went first, which is the usual case.
    let cut_rc = run.try_read("cut-sync-rc").unwrap_or_default();
    eprintln!(
        "after the power cut: cut-off sync exit status {:?}; last sync {now} (timer's {before})",
        cut_rc.trim()
    );
    if cut_rc.trim() == "0" {
        // It exited 0: its generation is durable and is what comes back.
        assert_eq!(
            after, late,
            "a sync that exited 0 did not survive the power cut:\n{after}\nits tree:\n{late}\n{ctx}"
        );
        assert!(now > before, "persist status still names the timer's sync");
    } else {
        assert_eq!(
            after, synced,
            "after the power cut DIR does not hold the timer's generation:\n{after}\ntimer's:\n{synced}\nlater:\n{late}\n{ctx}"
        );
        assert_eq!(
            now,
            before,
            "persist status does not say the timer's sync was the last:\n{}",
            run.read("status-after.txt")
        );
    }
    assert!(
        run.read("status-after.txt")
            .to_lowercase()
            .contains("last sync"),
        "persist status after the cut:\n{}",
        run.read("status-after.txt")
    );
}
