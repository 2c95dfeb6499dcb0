# scaling - search time vs n, log-log, every kernel on uniform: median with
# 95% interval bars, dashed O(n) and O(n^2) guides, fitted exponents in the legend.
name = "scaling"
load plots.'/common.gp'
set title titled(sprintf("Time per search vs particle count (%s, about 30 contacts per particle)", headline))
set xlabel "particles n"
set ylabel "time per search, ms (median, bars: 95% interval)"
set logscale xy
set format x "10^{%L}"
set format y "10^{%L}"
linear(x) = lin_t0 * (x / lin_n0)
quadratic(x) = quad_t0 * (x / quad_n0)**2
plot for [i=0:blocks_scaling-1] data.'/scaling.dat' index i using 1:2:3:4 \
         with yerrorlines ls i+1 title columnheader(1), \
     linear(x) ls 100 title "O(n) guide", \
     quadratic(x) ls 101 title "O(n^2) guide"
