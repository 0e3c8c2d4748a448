ln -sf userns-hostnet-runtime /usr/bin/userns-hostnet-runtime-crun
ln -sf userns-hostnet-runtime /usr/bin/userns-hostnet-runtime-youki
if [ "$1" -eq 1 ]; then
	echo "userns-hostnet is installed, and nothing has been registered yet: no containerd or CRI-O configuration was changed, no OCI hook was enabled and no daemon was restarted. Run 'userns-hostnet doctor', then 'userns-hostnet install containerd' (or crio) and restart the daemon it names. The createRuntime hook for podman and CRI-O is off until put into a hooks directory they read: 'userns-hostnet install podman --hook' (or crio --hook), or by hand: ln -s /usr/share/userns-hostnet/hooks.d/userns-hostnet.json /etc/containers/oci/hooks.d/"
fi
