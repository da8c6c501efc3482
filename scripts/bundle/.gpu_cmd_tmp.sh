set -u
mkdir -p /tmp/b && tar -C /tmp/b -xzf dist/pax-ocl-0.1.0-linux-x86_64.tar.gz && B=/tmp/b/pax-ocl-0.1.0-linux-x86_64
cp scripts/gpu_check.sh $B/bin/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv > $OUT/nvidia-smi.csv 2>&1
export PAX_OCL_CACHE_DIR=/tmp/pcache
timeout 60 $B/bin/gpu_check.sh --out $OUT/devices devices > $OUT/devices.out 2>&1
timeout 170 $B/bin/gpu_check.sh --out $OUT/step step > $OUT/step.out 2>&1
timeout 230 $B/bin/gpu_check.sh --out $OUT/train train > $OUT/train.out 2>&1
timeout 110 $B/bin/gpu_check.sh --out $OUT/tests tests > $OUT/tests.out 2>&1
ls -R $OUT | head -50
