# compare - two result files (harness/compare.py's data): the ratio of median
# times B / A per kernel line on uniform vs n, with its 95 % interval as an
# error bar; the band of equivalence (1 +- band) shaded; each point marked by
# its verdict: B faster (triangle down), slower (triangle up), equivalent (open
# circle), inconclusive (cross).
name = "compare"
load plots.'/common.gp'
set title titled(sprintf("B vs A: ratio of median times B / A with 95 %% intervals (%s)", headline))
set xlabel "particles n"
set ylabel "time ratio B / A (below 1: B is faster)"
set logscale xy
set format x "10^{%L}"
set yrange [ratio_min:ratio_max]
set ytics ("0.1" 0.1, "0.2" 0.2, "0.5" 0.5, "0.8" 0.8, "1" 1, "1.25" 1.25, "2" 2, "5" 5, "10" 10, "20" 20, "50" 50, "100" 100)
set object 1 rect from graph 0, first 1 - band to graph 1, first 1 + band behind \
    fc rgb "#e8e8e8" fs solid 1.0 noborder
set arrow from graph 0, first 1 to graph 1, first 1 nohead ls 100
if (one_process) {
    set label 1 "intervals from one round (one process) only: too narrow between processes" \
        at graph 0.02, graph 0.04 font ",11" tc rgb "#b00000"
}
# the verdict codes of compare.dat's 5th column: 0 equivalent, 1 faster, 2 slower,
# 3 inconclusive
verdict_pt(code) = code == 1 ? 11 : code == 2 ? 9 : code == 0 ? 6 : 2
if (blocks_compare == 0) {
    set label 2 sprintf("no configuration on %s in both files", headline) at graph 0.5, graph 0.5 center
    set xrange [100:100000]
    plot NaN notitle
} else {
    plot for [i=0:blocks_compare-1] data.'/compare.dat' index i using 1:2:3:4 \
             with yerrorlines ls i+1 pt -1 title columnheader(1), \
         for [i=0:blocks_compare-1] data.'/compare.dat' index i using 1:2:(verdict_pt($5)) \
             with points ls i+1 pt variable ps 1.6 notitle, \
         keyentry with points pt 11 ps 1.6 lc rgb "#333333" title "B faster", \
         keyentry with points pt 9 ps 1.6 lc rgb "#333333" title "B slower", \
         keyentry with points pt 6 ps 1.6 lc rgb "#333333" \
             title sprintf("equivalent (within 1 ± %g)", band), \
         keyentry with points pt 2 ps 1.6 lc rgb "#333333" title "inconclusive"
}
