# bound - every kernel's time as a multiple of the floor measured in the same
# run: the bound configuration (grid_sorted's binning into sorted cells, then
# a vectorised count of the contacts, writing nothing), at the same n and
# thread count.
name = "bound"
load plots.'/common.gp'
set title titled(sprintf("Time as a multiple of bound: grid\\_sorted's binning + contact count, no output (%s)", headline))
set xlabel "particles n"
set ylabel "time / bound's time (same n, threads; bars: 95% interval)"
set logscale xy
set format x "10^{%L}"
set yrange [0.8:*]
set arrow from graph 0, first 3 to graph 1, first 3 nohead ls 100
set label "3x" at graph 0.45, first 3.5
if (blocks_bound == 0) {
    set label 2 "no bound configuration in these results" at graph 0.5, graph 0.5 center
    set yrange [1:10]
    plot NaN notitle
} else {
    plot for [i=0:blocks_bound-1] data.'/bound.dat' index i using 1:2:3:4 \
             with yerrorlines ls i+1 title columnheader(1)
}
