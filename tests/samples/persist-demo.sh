# The README's persist sample: a directory `logs` in $D (on disk) with four
# files, and an empty registry (a tmpfs over /var/lib/tmpfsctl in the
# sample's private mount namespace), so the machine's persisted directories
# stay out of `persist status`.
mkdir -p /var/lib/tmpfsctl
mount -t tmpfs -o size=16M,mode=755 registry /var/lib/tmpfsctl
mkdir -p logs/app
head -c 300000 /dev/urandom > logs/app/log1
head -c 300000 /dev/urandom > logs/app/log2
head -c 300000 /dev/urandom > logs/app/log3
echo notes > logs/notes.txt
