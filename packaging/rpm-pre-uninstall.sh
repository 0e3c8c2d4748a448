# %preun: $1 is the number of versions left after this one goes, 0 on an
# erase, 1 or more on an upgrade (rpm -U), which is never refused. An
# erase while the wrapper is registered would leave the daemons running a
# file that no longer exists; a failing %preun makes rpm -e stop with the
# package installed. USERNS_HOSTNET_REMOVE_REGISTERED=1 erases anyway.
if [ "$1" -eq 0 ] && [ "${USERNS_HOSTNET_REMOVE_REGISTERED:-}" != 1 ]; then
	rc=0
	found=$(/usr/bin/userns-hostnet registrations 2>&1) || rc=$?
	if [ "$rc" -ne 0 ]; then
		if [ "$rc" -eq 1 ]; then
			echo "userns-hostnet: not removing: the runtime wrapper is still registered, and the daemons would be left running a file that no longer exists (containers of the handler could not be stopped). Run first, then restart the daemon it names:" >&2
			printf '%s\n' "$found" | sed 's/^/  /' >&2
		else
			echo "userns-hostnet: not removing: cannot tell whether the runtime wrapper is registered: $found" >&2
		fi
		echo "(USERNS_HOSTNET_REMOVE_REGISTERED=1 removes it anyway.)" >&2
		exit 1
	fi
fi
