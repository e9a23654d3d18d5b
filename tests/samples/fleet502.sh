# The fleet of the README's and docs/fleet.md's samples: 502 hosts shaped
# like the Kirkland /tmp survey's, in its TSV format.
python3 "$(dirname "$0")/../../bench/fleet-gen.py" 502 --format kirkland --seed 7 > fleet502.tsv
cp fleet502.tsv kirkland-502.tsv
