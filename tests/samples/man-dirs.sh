# Where the README's sample installs completions and man pages: empty
# tmpfs mounts in the sample's private mount namespace, so the machine's
# own stay untouched.
for d in /usr/share/bash-completion/completions /usr/local/share/man/man1; do
    mkdir -p "$d"
    mount -t tmpfs -o size=16M sample "$d"
done
