if [ "$1" -eq 0 ]; then
	rm -f /usr/bin/userns-hostnet-runtime-crun /usr/bin/userns-hostnet-runtime-youki
	# The records of converted containers and the probe cache: nothing
	# reads them once the wrapper is gone.
	rm -rf /run/userns-hostnet
fi
