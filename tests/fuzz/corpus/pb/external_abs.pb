Btj
location/etc/passwdp