# docs/mounts.md's sample: a cache directory (3 files, a subdirectory, a
# symlink) and an fstab of its own, in $D; applied for real in the sample's
# private mount namespace.
mkdir -p srv/cache/sub
chmod 755 srv/cache
head -c 200000 /dev/urandom > srv/cache/index.db
head -c 90000 /dev/urandom > srv/cache/sub/blob
echo v1 > srv/cache/VERSION
ln -s index.db srv/cache/current
printf '# <file system> <mount point> <type> <options> <dump> <pass>\nUUID=4f3e2a1c-8d0b-4c55-9a51-0c1e5b7d2f10 / ext4 errors=remount-ro 0 1\n' > fstab
# A minute old: apply leaves entries changed in the second before its copy to
# the catch-up (and says so), which would make the sample depend on timing.
find srv -exec touch -h -d '-1 minute' {} +
