if [ "$1" -eq 0 ]; then
	rm -f /usr/bin/userns-hostnet-runtime-crun /usr/bin/userns-hostnet-runtime-youki
fi
