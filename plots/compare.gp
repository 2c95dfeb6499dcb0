# compare - two result files: the ratio of medians (B / A) per kernel on
# uniform vs n; filled points where compare.py's U-test finds the difference
# significant (p < 0.05).
name = "compare"
load plots.'/common.gp'
set title titled("Machine B vs machine A: ratio of median times, B / A (uniform)")
set xlabel "particles n"
set ylabel "time ratio B / A (below 1: B is faster)"
set logscale xy
set format x "10^{%L}"
set arrow from graph 0, first 1 to graph 1, first 1 nohead ls 100
plot for [i=0:blocks_compare-1] data.'/compare.dat' index i using 1:2 \
         with lines ls i+1 title columnheader(1), \
     for [i=0:blocks_compare-1] data.'/compare.dat' index i using 1:($3 > 0 ? $2 : 1/0) \
         with points ls i+1 pt 7 notitle, \
     for [i=0:blocks_compare-1] data.'/compare.dat' index i using 1:($3 > 0 ? 1/0 : $2) \
         with points ls i+1 pt 6 notitle
