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
  sync
  echo 0 > /proc/sys/vm/dirty_writeback_centisecs
  echo 360000 > /proc/sys/vm/dirty_expire_centisecs
  echo late > $D/late-1; echo "changed after the sync" > $D/early-2; rm $D/early-3
  head -c 8388608 /dev/urandom > $D/sub/big
  tree $D > $O/tree-late
  sync -f $O/tree-late
  # A sync is under way when the power goes: the store comes back whole, old or new.
  tmpfsctl persist sync $D > /dev/null 2>&1 &
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
    assert!(
        synced.contains("changed before") || synced.contains("./early-1"),
        "nothing recorded before the cut\n{ctx}"
    );
    assert!(
        synced.lines().count() == 4 && late.lines().count() == 4,
        "trees before the cut:\n{synced}\n{late}\n{ctx}"
    );
    let json = |name: &str| -> serde_json::Value {
        serde_json::from_str(&run.read(name)).unwrap_or_default()
    };
    let last = |v: &serde_json::Value| v["dirs"][0]["last_sync_unix_s"].as_u64();
    let (before, now) = (json("status-before.json"), json("status-after.json"));
    eprintln!(
        "after the power cut: {} tree came back; last sync {:?} (timer's {:?})",
        if after == synced {
            "the timer's"
        } else {
            "the cut-off sync's"
        },
        last(&now),
        last(&before)
    );
    if after == synced {
        assert_eq!(
            last(&now),
            last(&before),
            "persist status does not say the timer's sync was the last:\n{}",
            run.read("status-after.txt")
        );
    } else {
        // The sync under way committed before the cut: then all of it.
        assert_eq!(
            after, late,
            "after the power cut DIR holds a mixed tree:\n{after}\ntimer's:\n{synced}\nlater:\n{late}\n{ctx}"
        );
        assert!(last(&now) > last(&before));
    }
    assert!(
        run.read("status-after.txt")
            .to_lowercase()
            .contains("last sync"),
        "persist status after the cut:\n{}",
        run.read("status-after.txt")
    );
}
