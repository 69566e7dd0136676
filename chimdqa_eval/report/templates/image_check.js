{# After load, record in the page whether each embedded image decoded (naturalWidth > 0): browsers then show,
   and headless checks can read, a plain status instead of guessing from pixels. The page's laid-out width is
   recorded too, so a headless check can tell whether it scrolls sideways. The lines are joined into one (see
   JoinLines in html.py): every statement ends in ; or }, and there are no // comments. #}
function checkImages(){var imgs=document.images,ok=0;for(var i=0;i<imgs.length;i++){
var good=imgs[i].complete&&imgs[i].naturalWidth>0;imgs[i].setAttribute('data-rendered',good?'yes':'no');if(good)ok++;}
var s=document.getElementById('image-status');if(s){s.textContent=ok+' of '+imgs.length+' images rendered';
s.setAttribute('data-ok',ok);s.setAttribute('data-total',imgs.length);}
var d=document.documentElement;document.body.setAttribute('data-width',d.scrollWidth+'/'+d.clientWidth);}
if(document.readyState==='complete'){checkImages();}else{window.addEventListener('load',checkImages);}
