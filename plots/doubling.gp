# doubling - t(2n)/t(n): 4 for O(n^2) (doubling the particles quarters the
# frame rate), 2 for O(n) (it only halves it).
name = "doubling"
load plots.'/common.gp'
set title titled(sprintf("Cost of doubling the particles: t(2n) / t(n) (%s)", headline))
set xlabel "particles n (before doubling)"
set ylabel "t(2n) / t(n) (bars: 95% interval)"
set logscale x
set format x "10^{%L}"
set yrange [0:6]
set arrow from graph 0, first 4 to graph 1, first 4 nohead ls 101
set arrow from graph 0, first 2 to graph 1, first 2 nohead ls 100
set label "O(n^2): 4" at graph 0.02, first 4.2
set label "O(n): 2" at graph 0.02, first 2.2
plot for [i=0:blocks_doubling-1] data.'/doubling.dat' index i using 1:2:3:4 \
         with yerrorlines ls i+1 title columnheader(1)
