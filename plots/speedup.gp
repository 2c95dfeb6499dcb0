# speedup - parallel kernels: time with 1 thread over time with T threads.
name = "speedup"
load plots.'/common.gp'
set title titled(sprintf("Parallel speed-up: t(1 thread) / t(%d threads) (%s)", threads, headline))
set xlabel "particles n"
set ylabel "speed-up (bars: 95% interval)"
set logscale x
set format x "10^{%L}"
set yrange [0:threads + 0.5]
set arrow from graph 0, first threads to graph 1, first threads nohead ls 100
set arrow from graph 0, first 1 to graph 1, first 1 nohead ls 101
set label sprintf("ideal: %d", threads) at graph 0.02, first threads + 0.1
set label "no gain: 1" at graph 0.02, first 1.1
plot for [i=0:blocks_speedup-1] data.'/speedup.dat' index i using 1:2:3:4 \
         with yerrorlines ls i+1 title columnheader(1)
