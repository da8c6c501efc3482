# Time vs sequence length (log-log) of the SSM convolution, clFFT against direct, from the table
# bench_ssm_conv prints ('#' lines are comments to gnuplot).
# Usage: build/bench/bench_ssm_conv > ssm_conv.txt
#        gnuplot -e "data='ssm_conv.txt'; out='ssm_conv.png'" bench/plot_ssm_conv.gp
if (!exists("data")) data = 'ssm_conv.txt'
if (!exists("out")) out = 'ssm_conv.png'
set terminal pngcairo size 900,600 noenhanced
set output out
set title 'SSM causal convolution: clFFT vs direct (' . data . ')'
set logscale xy 2
set format y '%g'
set xlabel 'sequence length L'
set ylabel 'milliseconds (best of runs)'
set key top left
set grid
plot data using 1:2 with linespoints lw 2 lc rgb '#1f77b4' pt 7 title 'convolution, fft', \
     data using 1:3 with linespoints lw 2 lc rgb '#1f77b4' pt 6 dt 2 title 'convolution, direct', \
     data using 1:4 with linespoints lw 2 lc rgb '#2ca02c' pt 5 title 'forward, fft', \
     data using 1:5 with linespoints lw 2 lc rgb '#2ca02c' pt 4 dt 2 title 'forward, direct', \
     data using 1:6 with linespoints lw 2 lc rgb '#d62728' pt 9 title 'forward+backward, fft', \
     data using 1:7 with linespoints lw 2 lc rgb '#d62728' pt 8 dt 2 title 'forward+backward, direct'
