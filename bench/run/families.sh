# shellcheck shell=bash
# The graphs of bench/run/fit_families.sh and bench/run/fit_profiles.sh (sourced after common.sh's bench_init and
# ensure_gcnpart): each graph's family and how to make it, generated once into $GRAPH_DIR (deterministic, so a file
# an earlier call left is reused) or a shared dataset with synthetic features.

# Graphs: name -> family, then how to make it (generate arguments, or a dataset with synthetic features).
declare -A family=(
  [rmat18]=rmat [rmat21]=rmat [rmat22]=rmat
  [mild19]=rmat-mild [mild21]=rmat-mild
  [uni1m]=uniform [products]=uniform
  [comm800k]=community [comm3m]=community
  [mesh2d]=mesh [mesh3d]=mesh
  [ord2d]=mesh-ordered [ord3d]=mesh-ordered
  [slashdot]=snap [wing]=metis
  [rmat20s7]=rmat [rmat22s7]=rmat [mild18s7]=rmat-mild [mild22s7]=rmat-mild [uni600k]=uniform [uni3m]=uniform
  [comm1m]=community [comm400k]=community [mesh1600]=mesh [mesh110]=mesh [ord800]=mesh-ordered [ord130]=mesh-ordered
  [r15s11]=rmat [r21s11]=rmat [m16s11]=rmat-mild [m20s11]=rmat-mild [u25k]=uniform [u1500k]=uniform
  [c40k]=community [c2m]=community [g150]=mesh [g90]=mesh [g1900]=mesh [o45]=mesh-ordered [o1800]=mesh-ordered
  [r16s13]=rmat [r19s13]=rmat [r22s13]=rmat [m18s13]=rmat-mild [m21s13]=rmat-mild [u60k]=uniform [u2500k]=uniform
  [c120k]=community [c3500k]=community [g200]=mesh [g150d3]=mesh [o70]=mesh-ordered [o1500]=mesh-ordered
)
declare -A make=(
  [rmat18]="generate rmat --scale 18 --edge-factor 16 --features 128 --classes 40"
  [rmat21]="generate rmat --scale 21 --edge-factor 30 --features 100 --classes 47"
  [rmat22]="generate rmat --scale 22 --edge-factor 16 --features 100 --classes 47"
  [mild19]="generate rmat --scale 19 --edge-factor 24 --a 0.45 --b 0.22 --c 0.22 --features 128 --classes 40"
  [mild21]="generate rmat --scale 21 --edge-factor 12 --a 0.45 --b 0.22 --c 0.22 --features 100 --classes 47"
  [uni1m]="generate sbm --nodes 1000000 --avg-degree 20 --classes 8 --p-intra 0.3 --features 128 --train-per-class 20000"
  [products]="generate sbm --nodes 2449029 --avg-degree 50.6 --features 100 --classes 47 --train-per-class 2000 --valid 20000 --test 50000"
  [comm800k]="generate sbm --nodes 800000 --avg-degree 16 --classes 128 --p-intra 0.9 --features 128 --train-per-class 500"
  [comm3m]="generate sbm --nodes 3000000 --avg-degree 12 --classes 256 --p-intra 0.95 --features 100 --train-per-class 500"
  [mesh2d]="generate grid --side 1100 --dims 2 --features 128 --classes 16"
  [mesh3d]="generate grid --side 140 --dims 3 --features 100 --classes 16"
  [ord2d]="generate grid --side 2050 --dims 2 --natural-order --features 100 --classes 16"
  [ord3d]="generate grid --side 100 --dims 3 --natural-order --features 128 --classes 16"
  [slashdot]="soc-Slashdot0902 --synthetic-features 128 --synthetic-classes 16"
  [wing]="wing --synthetic-features 64 --synthetic-classes 8"
  [rmat20s7]="generate rmat --scale 20 --edge-factor 20 --seed 7 --features 128 --classes 32"
  [rmat22s7]="generate rmat --scale 22 --edge-factor 12 --seed 7 --features 100 --classes 47"
  [mild18s7]="generate rmat --scale 18 --edge-factor 32 --a 0.45 --b 0.22 --c 0.22 --seed 7 --features 64 --classes 16"
  [mild22s7]="generate rmat --scale 22 --edge-factor 8 --a 0.45 --b 0.22 --c 0.22 --seed 7 --features 100 --classes 47"
  [uni600k]="generate sbm --nodes 600000 --avg-degree 12 --classes 4 --p-intra 0.25 --features 128 --seed 7 --train-per-class 20000"
  [uni3m]="generate sbm --nodes 3500000 --avg-degree 30 --classes 10 --p-intra 0.1 --features 100 --seed 7 --train-per-class 5000"
  [comm1m]="generate sbm --nodes 1200000 --avg-degree 24 --classes 512 --p-intra 0.92 --features 128 --seed 7 --train-per-class 200"
  [comm400k]="generate sbm --nodes 400000 --avg-degree 10 --classes 64 --p-intra 0.85 --features 64 --seed 7 --train-per-class 500"
  [mesh1600]="generate grid --side 1600 --dims 2 --seed 7 --features 100 --classes 8"
  [mesh110]="generate grid --side 110 --dims 3 --seed 7 --features 128 --classes 8"
  [ord800]="generate grid --side 800 --dims 2 --natural-order --features 128 --classes 8"
  [ord130]="generate grid --side 130 --dims 3 --natural-order --features 64 --classes 8"
  [r15s11]="generate rmat --scale 15 --edge-factor 12 --seed 11 --features 64 --classes 8"
  [r21s11]="generate rmat --scale 21 --edge-factor 16 --seed 11 --features 100 --classes 47"
  [m16s11]="generate rmat --scale 16 --edge-factor 20 --a 0.45 --b 0.22 --c 0.22 --seed 11 --features 128 --classes 16"
  [m20s11]="generate rmat --scale 20 --edge-factor 24 --a 0.45 --b 0.22 --c 0.22 --seed 11 --features 100 --classes 47"
  [u25k]="generate sbm --nodes 25000 --avg-degree 16 --classes 6 --p-intra 0.3 --features 128 --seed 11 --train-per-class 500"
  [u1500k]="generate sbm --nodes 1500000 --avg-degree 40 --classes 12 --p-intra 0.2 --features 100 --seed 11 --train-per-class 5000"
  [c40k]="generate sbm --nodes 40000 --avg-degree 14 --classes 32 --p-intra 0.9 --features 100 --seed 11 --train-per-class 100"
  [c2m]="generate sbm --nodes 2000000 --avg-degree 20 --classes 512 --p-intra 0.93 --features 128 --seed 11 --train-per-class 200"
  [g150]="generate grid --side 150 --dims 2 --seed 11 --features 64 --classes 8"
  [g90]="generate grid --side 90 --dims 3 --seed 11 --features 100 --classes 16"
  [g1900]="generate grid --side 1900 --dims 2 --seed 11 --features 128 --classes 8"
  [o45]="generate grid --side 45 --dims 3 --natural-order --features 128 --classes 16"
  [o1800]="generate grid --side 1800 --dims 2 --natural-order --features 100 --classes 8"
  [r16s13]="generate rmat --scale 16 --edge-factor 24 --seed 13 --features 128 --classes 16"
  [r19s13]="generate rmat --scale 19 --edge-factor 40 --seed 13 --features 64 --classes 32"
  [r22s13]="generate rmat --scale 22 --edge-factor 10 --seed 13 --features 100 --classes 47"
  [m18s13]="generate rmat --scale 18 --edge-factor 16 --a 0.45 --b 0.22 --c 0.22 --seed 13 --features 100 --classes 24"
  [m21s13]="generate rmat --scale 21 --edge-factor 20 --a 0.45 --b 0.22 --c 0.22 --seed 13 --features 128 --classes 40"
  [u60k]="generate sbm --nodes 60000 --avg-degree 20 --classes 8 --p-intra 0.3 --features 100 --seed 13 --train-per-class 1000"
  [u2500k]="generate sbm --nodes 2500000 --avg-degree 28 --classes 16 --p-intra 0.15 --features 128 --seed 13 --train-per-class 5000"
  [c120k]="generate sbm --nodes 120000 --avg-degree 18 --classes 64 --p-intra 0.9 --features 128 --seed 13 --train-per-class 200"
  [c3500k]="generate sbm --nodes 3500000 --avg-degree 14 --classes 1024 --p-intra 0.94 --features 100 --seed 13 --train-per-class 100"
  [g200]="generate grid --side 200 --dims 2 --seed 13 --features 100 --classes 8"
  [g150d3]="generate grid --side 150 --dims 3 --seed 13 --features 128 --classes 16"
  [o70]="generate grid --side 70 --dims 3 --natural-order --features 100 --classes 8"
  [o1500]="generate grid --side 1500 --dims 2 --natural-order --features 128 --classes 16"
)

# family_data NAME: the DATA argument of a gcnpart command for graph NAME (with synthetic-feature options for a
# structure-only dataset), generating $GRAPH_DIR/families-NAME.gcsr first when needed; fails for an unknown name or
# a failed generation (its log in $W).
family_data() {
  local name=$1 spec=${make[$1]:-}
  [ -n "$spec" ] || { echo "no graph $name in bench/run/families.sh" >&2; return 1; }
  if [[ $spec == generate* ]]; then
    local f="$GRAPH_DIR/families-$name.gcsr"
    # shellcheck disable=SC2086  # the generator's arguments, split on purpose
    [ -f "$f" ] || "$GCNPART" -q $spec -o "$f" > "$W/generate-$name.log" 2>&1 ||
      { echo "generate $name failed" >&2; return 1; }
    echo "$f"
  else
    echo "$spec"
  fi
}
