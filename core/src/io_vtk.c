/* placeholder */ typedef int floe_placeholder_io_vtk;
