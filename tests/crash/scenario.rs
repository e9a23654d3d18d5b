//! The scenario the guest runs on a logged disk, step by step: each step is
//! a tmpfsctl command; before it the guest lists the tree the step promises
//! (out/tree-N), and after it exits 0 it writes an ACK record (step number
//! and the listing's digest) to the disk's last MiB, outside the file
//! system, with O_DIRECT|O_DSYNC, so the log orders every ACK against the
//! command's own writes and flushes.

/// The disk's label, its size and the ACK area (its last MiB).
pub const LABEL: &str = "crashfs";
pub const DISK_BYTES: u64 = 768 << 20;
pub const ACK_BYTES: u64 = 1 << 20;

/// Steps: 1 enable, 2..=6 syncs, 7 disable (DIR back on disk), 8 apply
/// --boot fstab, 9 revert --keep-data; then a second DIR and store: 10
/// enable, 11 sync, its tmpfs unmounted as a reboot without a boot hook
/// leaves it, 12 disable (the store loaded into DIR on disk).
pub const ENABLE: u32 = 1;
pub const DISABLE: u32 = 7;
pub const APPLY: u32 = 8;
pub const REVERT: u32 = 9;
pub const ENABLE2: u32 = 10;
pub const SYNC2: u32 = 11;
pub const DISABLE2: u32 = 12;
pub const STEPS: u32 = 12;

/// The steps that are a `persist sync`: each leaves a `last-sync` record
/// naming the generation it made.
pub fn is_sync(step: u32) -> bool {
    (2..=6).contains(&step) || step == SYNC2
}

/// The fstab the revert scenario edits, made on the host before the boot.
pub const FSTAB: &str = "# /etc/fstab of the crash scenario\nLABEL=guestroot / ext4 defaults 0 1\n";

pub const SCRIPT: &str = r#"
M=/mnt/crash
S=$(blkid -L crashfs) || { say "no disk labelled crashfs"; power_off; }
mkdir -p $M
mount $S $M || { say "cannot mount $S"; power_off; }
ACKS=$(( $(blockdev --getsz $S) - 2048 ))
C=/probe/crash
promise() { $C tree "$2" > $O/tree-$1 || say "listing $2 failed"; }
ack() {
  d=$(sha256sum < $O/tree-$1 | cut -c1-16)
  printf 'TMPFSCTL-ACK %s %s\n' $1 $d | dd of=$S bs=512 seek=$((ACKS + $1)) count=1 oflag=direct,dsync conv=sync,notrunc status=none || say "ack $1 failed"
}
# A BEGIN record, flushed before the command starts: a crash state without
# it holds none of the command's writes.
begin() {
  printf 'TMPFSCTL-BEGIN %s\n' $1 | dd of=$S bs=512 seek=$((ACKS + 1024 + $1)) count=1 oflag=direct,dsync conv=sync,notrunc status=none || say "begin $1 failed"
}
step() { k=$1; shift; begin $k; if "$@" > $O/step-$k.txt 2>&1; then ack $k; else say "step $k failed: $*"; cat $O/step-$k.txt >> $O/log; fi; }

D=$M/data
mkdir -p $D/sub $D/logs
for i in 1 2 3 4 5; do echo "file $i" > $D/f$i; done
head -c 300000 /dev/urandom > $D/sub/blob
echo line1 > $D/logs/app.log
promise 1 $D
step 1 tmpfsctl persist enable $D --store $M/store --keep 2 --boot none --yes
# new files and a 64 MiB one
head -c 67108864 /dev/urandom > $D/big
mkdir $D/new; echo hello > $D/new/a; head -c 100000 /dev/urandom > $D/new/b
promise 2 $D; step 2 tmpfsctl persist sync $D
# in-place rewrites, appends, deletes, renames (a sync that prunes: --keep 2)
printf 'REWRITTEN' | dd of=$D/sub/blob bs=1 seek=1000 conv=notrunc status=none
dd if=/dev/urandom of=$D/big bs=4096 seek=5000 count=16 conv=notrunc status=none
echo line2 >> $D/logs/app.log
rm $D/f1; mv $D/f2 $D/f2.renamed; mv $D/new $D/moved
promise 3 $D; step 3 tmpfsctl persist sync $D
# hard links, symlinks, xattrs
ln $D/f3 $D/f3.hard; ln -s f4 $D/f4.sym; ln -s /nowhere $D/dangling
$C setxattr $D/f5 user.colour blue
$C setxattr $D/sub user.dir yes
echo line3 >> $D/logs/app.log
promise 4 $D; step 4 tmpfsctl persist sync $D
# 2000 small files
mkdir $D/many
i=0; while [ $i -lt 2000 ]; do echo "small $i" > $D/many/s$i; i=$((i+1)); done
promise 5 $D; step 5 tmpfsctl persist sync $D
# half of the big file rewritten, small files deleted
head -c 33554432 /dev/urandom | dd of=$D/big conv=notrunc status=none
rm $D/many/s1*; echo line4 >> $D/logs/app.log
promise 6 $D; step 6 tmpfsctl persist sync $D
# disable: a change its own sync takes, then DIR back on disk
echo last > $D/last
promise 7 $D; step 7 tmpfsctl persist disable $D --yes

A=$M/app; F=$M/etc/fstab
mkdir -p $A; echo "on disk before apply" > $A/old
promise 8 $A
step 8 tmpfsctl apply $A --boot fstab --fstab $F --size 256M --yes
cp $F $O/fstab-new
echo new > $A/new1; head -c 5000000 /dev/urandom > $A/data.bin
mkdir $A/d; echo deep > $A/d/y; ln -s new1 $A/link; rm $A/old
promise 9 $A
step 9 tmpfsctl revert $A --keep-data --fstab $F --yes

# disable with DIR's tmpfs gone (no boot hook, then a reboot): the store
# is loaded into DIR on disk
E=$M/data2
mkdir -p $E/d; echo one > $E/a; head -c 2000000 /dev/urandom > $E/d/blob
promise 10 $E
step 10 tmpfsctl persist enable $E --store $M/store2 --boot none --yes
echo changed > $E/a; echo two > $E/b; head -c 3000000 /dev/urandom > $E/d/blob2; rm $E/d/blob
promise 11 $E; step 11 tmpfsctl persist sync $E
umount $E || say "umount $E failed"
cp $O/tree-11 $O/tree-12
step 12 tmpfsctl persist disable $E --yes
umount $M || say "umount $M failed"
say "scenario done"
power_off
"#;

/// What the ACK area of a disk image holds: the ACK records (step and
/// digest), and the last step whose BEGIN record is there.
pub struct Marks {
    pub acks: Vec<(u32, String)>,
    pub begun: u32,
}

impl Marks {
    pub fn acked(&self) -> u32 {
        self.acks.iter().map(|a| a.0).max().unwrap_or(0)
    }
}

pub fn marks(img: &std::fs::File) -> Marks {
    use std::os::unix::fs::FileExt;
    let mut area = vec![0u8; ACK_BYTES as usize];
    img.read_exact_at(&mut area, DISK_BYTES - ACK_BYTES)
        .unwrap();
    let sectors: Vec<&[u8]> = area.chunks(512).collect();
    let mut m = Marks {
        acks: Vec::new(),
        begun: 0,
    };
    for n in 1..=STEPS as usize {
        let ack = String::from_utf8_lossy(sectors[n]);
        if let Some(rest) = ack.strip_prefix("TMPFSCTL-ACK ") {
            let w: Vec<&str> = rest.split_whitespace().collect();
            assert_eq!(
                w.first(),
                Some(&n.to_string().as_str()),
                "ACK in the wrong sector"
            );
            m.acks.push((n as u32, w.get(1).unwrap_or(&"").to_string()));
        }
        let begin = String::from_utf8_lossy(sectors[1024 + n]);
        if begin.starts_with(&format!("TMPFSCTL-BEGIN {n}\n")) {
            m.begun = n as u32;
        }
    }
    m
}
