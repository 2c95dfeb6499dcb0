# peers - search time vs n, log-log, on the headline workload: the other
# libraries (nanoflann, Boost.Geometry, CGAL, ...) beside the featured kernels
# (grid_sorted, hash_parallel), measured in the same run; medians with 95%
# interval bars. A file without peers draws the featured kernels alone.
name = "peers"
load plots.'/common.gp'
set title titled(sprintf("Other libraries vs the kernels: time per search (%s)", headline))
set xlabel "particles n"
set ylabel "time per search, ms (median, bars: 95% interval)"
set logscale xy
set format x "10^{%L}"
set format y "10^{%L}"
if (blocks_peers == 0) {
    set label 1 "no peers or featured kernels in this run" at graph 0.5, 0.5 center
    set xrange [100:1000000]
    set yrange [0.01:1000]
    plot NaN notitle
} else {
    plot for [i=0:blocks_peers-1] data.'/peers.dat' index i using 1:2:3:4 \
             with yerrorlines ls i+1 title columnheader(1)
}
