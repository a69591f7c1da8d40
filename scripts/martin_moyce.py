# The ROW lines of scenes/validation/dam_break_2d_wcsph.lua against Martin &
# Moyce (1952): the front for T in [0.5, 2.5] as measured and with the time
# origin shifted by 0.175 (the gate; docs/validation.md), the column height
# at the wall over the table's tau up to the run's end.
# With the run's folder as a second argument, the front of its probe
# front.probe.csv (the outermost particle with two others within 1.5 d, as
# `floe validate` and the solver tests take it) is compared too.
#   python3 scripts/martin_moyce.py LOG [RUN_DIR]
import os, sys, numpy as np
rows=[l.split()[2:] for l in open(sys.argv[1]) if 'ROW' in l]
a=np.array([[float(x) for x in r] for r in rows])
T,Z,tau,H,out=a.T
fr=np.loadtxt(os.path.join(os.path.dirname(__file__), '..', 'tests', 'validation', 'dambreak2d_martin_moyce_n2eq2_a2.25in_table2_front.csv'),delimiter=',',comments='#',skiprows=5)
hr=np.loadtxt(os.path.join(os.path.dirname(__file__), '..', 'tests', 'validation', 'dambreak2d_martin_moyce_n2eq2_a2.25in_table6_height.csv'),delimiter=',',comments='#',skiprows=5)
sel=(fr[:,0]>=0.5)&(fr[:,0]<=2.5)&(fr[:,0]<=T.max())
e=[(np.interp(t,T,Z)-z)/z for t,z in fr[sel]]
es=[(np.interp(t-0.175,T,Z)-z)/z for t,z in fr[sel]]
hs=hr[hr[:,0]<=tau.max()]
eh=[(np.interp(t,tau,H)-h)/h for t,h in hs]
print("front worst %.1f%%  shifted worst %.1f%% (%s)  height worst %.1f%% over tau<=%.2f (%s)  outside max %d"%(100*max(map(abs,e)),100*max(map(abs,es)),' '.join('%+.1f'%(100*x) for x in es),100*max(map(abs,eh)) if eh else -1,tau.max(),' '.join('%+.1f'%(100*x) for x in eh),out.max()))
if len(sys.argv) > 2:
    pr=np.loadtxt(os.path.join(sys.argv[2], 'front.probe.csv'), delimiter=',', skiprows=1)
    pb=[(np.interp(t,pr[:,0],pr[:,1])-z)/z for t,z in fr[sel]]
    pbs=[(np.interp(t-0.175,pr[:,0],pr[:,1])-z)/z for t,z in fr[sel]]
    print("body front (probe, min_neighbours 2) worst %.1f%%  shifted worst %.1f%% (%s)"%(100*max(map(abs,pb)),100*max(map(abs,pbs)),' '.join('%+.1f'%(100*x) for x in pbs)))
