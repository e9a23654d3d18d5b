# The README's advise sample: /tmp on ext4 (a 1 GiB image on $D, loop
# mounted in the sample's private mount namespace) holding 64 MiB in 100
# files.
truncate -s 1G "$D/tmp.img"
mkfs.ext4 -q -F "$D/tmp.img"
mount -o loop "$D/tmp.img" /tmp
chmod 1777 /tmp
for i in $(seq 100); do head -c 655360 /dev/urandom > "/tmp/f$i"; done
