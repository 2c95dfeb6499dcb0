# per_particle - time per particle vs n: flat for O(n) kernels, rising for
# O(n^2); where each kernel first beats naive is marked.
name = "per_particle"
load plots.'/common.gp'
set title titled(sprintf("Time per particle vs particle count (%s)", headline))
set xlabel "particles n"
set ylabel "search time per particle, ns (bars: 95% interval)"
set logscale xy
set format x "10^{%L}"
plot for [i=0:blocks_per_particle-2] data.'/per_particle.dat' index i using 1:2:3:4 \
         with yerrorlines ls i+1 title columnheader(1), \
     data.'/per_particle.dat' index (blocks_per_particle-1) using 1:2 \
         with points pt 6 ps 3 lw 2 lc rgb "black" title "first n faster than naive"
