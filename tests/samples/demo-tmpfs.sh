# A 64 MiB tmpfs on $D: a 24 MiB core dump in its root, root's 12 MiB build
# directory, nobody's 6 MiB cache, and a 20 MiB log deleted while `sleep`
# still holds it open (its PID in $PIDS). Run by tests/it/samples.rs, in a
# private mount namespace.
mount -t tmpfs -o size=64M,nr_inodes=2000 demo "$D"
mkdir "$D/build" "$D/alice"
head -c 24M /dev/urandom > "$D/core.1234"
head -c 12M /dev/urandom > "$D/build/app.o"
head -c 6M /dev/urandom > "$D/alice/cache.db"
chown -R 65534:65534 "$D/alice"
head -c 20M /dev/urandom > "$D/build.log"
# Opened here, not in the child: a child that opens it itself may come after
# the rm below and find no file.
exec 3< "$D/build.log"
sleep 600 0<&3 3<&- > /dev/null 2>&1 &
echo $! > "$PIDS"
exec 3<&-
rm "$D/build.log"
