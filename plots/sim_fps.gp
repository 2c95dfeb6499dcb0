# sim_fps - frames per second of `nsearch sim` against the particles, one line
# per (kernel, threads, skin), from harness/sim_results.py data's sim_fps.dat
# (rows: n, median fps and its 95 % interval, fps(n)/fps(2n) and its interval
# or NaN, search ms, resolve ms). Error bars: the interval of the median over
# the runs. Each point with a measured 2n is labelled with that ratio, halfway
# to 2n: 4 per doubling is O(n^2), 2 is O(n) (the intervals of the ratios are
# in sim_summary.md).
name = "sim_fps"
load plots.'/common.gp'
set title titled("Simulation frame rate vs particles (settled pile, frame = search + resolve + integrate)")
set xlabel "particles n"
set ylabel "frames per second (median of the runs, 95 % interval)"
set logscale xy
# ticks at 1, 2 and 5 per decade (sweeps often span less than a decade or two)
set xtics () ; set ytics ()
tick(v) = v >= 1e6 ? sprintf("%gM", v / 1e6) : v >= 1e3 ? sprintf("%gk", v / 1e3) : sprintf("%g", v)
do for [e=0:8] {
    do for [m in "1 2 5"] {
        v = m * 10.0**e
        set xtics add (tick(v) v)
        set ytics add (sprintf("%g", v) v)
    }
}
set mxtics 10
set mytics 10
set autoscale xfix
set autoscale yfix
set offsets graph 0.06, graph 0.08, graph 0.1, graph 0.1
set key inside right top
set label 1 "labels: fps(n) / fps(2n), the cost of doubling n" \
    at graph 0.02, graph 0.09 left front font ",11" tc rgb "#555555"
set label 2 "÷4 per doubling = O(n²), ÷2 = O(n)" \
    at graph 0.02, graph 0.04 left front font ",11" tc rgb "#555555"
# The label of the step from n to 2n sits on the segment's midpoint (in log
# scale): x = n*sqrt(2), y = sqrt(fps(n) * fps(2n)) = fps(n) / sqrt(ratio);
# the 1st, 3rd, ... line's labels above it, the others' below, so that the
# labels of lines close together do not overlap.
has_ratio(r) = (r == r && r > 0) ? 1 : 0
mid_x(n, r) = has_ratio(r) ? n * sqrt(2.0) : NaN
mid_y(f, r) = has_ratio(r) ? f / sqrt(r) : NaN
if (blocks_sim_fps == 0) {
    set label 3 "no simulation runs in these results" at graph 0.5, graph 0.5 center
    set yrange [1:10]
    set xrange [1:10]
    plot NaN notitle
} else {
    plot for [i=0:blocks_sim_fps-1] data.'/sim_fps.dat' index i using 1:2:3:4 \
             with yerrorlines ls i+1 title columnheader(1), \
         for [i=0:blocks_sim_fps-1:2] data.'/sim_fps.dat' index i \
             using (mid_x($1, $5)):(mid_y($2, $5)):(sprintf("÷%.1f", $5)) \
             with labels left tc ls i+1 font ",10" offset 0.5, 0.5 notitle, \
         for [i=1:blocks_sim_fps-1:2] data.'/sim_fps.dat' index i \
             using (mid_x($1, $5)):(mid_y($2, $5)):(sprintf("÷%.1f", $5)) \
             with labels right tc ls i+1 font ",10" offset -0.5, -0.5 notitle
}
